//! Writes the specification of the kernels' target into a directory and prints its absolute
//! path, for tools that compile a kernel crate themselves:
//!
//! ```text
//! spec=$(cargo run -q -p dlmd-build --example kernel-target -- target/dlmd-target [TOOLCHAIN])
//! cargo +nightly clippy -Zbuild-std=core -Zjson-target-spec --target "$spec" -p my-kernels
//! ```
//!
//! `TOOLCHAIN` is the rustup toolchain that compiles the kernels (`nightly` unless named).

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(dir) = args.next() else {
        eprintln!(
            "usage: kernel-target DIR [TOOLCHAIN]   (writes {}.json under DIR)",
            dlmd_build::TARGET
        );
        std::process::exit(2);
    };
    let toolchain = args
        .next()
        .map_or("nightly".into(), |t| t.to_string_lossy().into_owned());
    let spec = dlmd_build::kernel_target_spec(&toolchain, dir)
        .and_then(|spec| std::fs::canonicalize(&spec).map_err(|e| dlmd_build::BuildError::Io(spec, e)));
    match spec {
        Ok(spec) => println!("{}", spec.display()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
