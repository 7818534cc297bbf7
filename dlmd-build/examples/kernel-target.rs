//! Writes the specification of the kernels' target into a directory and prints its path, for
//! tools that compile a kernel crate themselves:
//!
//! ```text
//! spec=$(cargo run -q -p dlmd-build --example kernel-target -- target/dlmd-target)
//! cargo +nightly clippy -Zbuild-std=core -Zjson-target-spec --target "$spec" -p my-kernels
//! ```

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: kernel-target DIR   (writes DIR/{}.json)", dlmd_build::TARGET);
        std::process::exit(2);
    };
    match dlmd_build::kernel_target_spec("nightly", dir) {
        Ok(spec) => println!("{}", spec.display()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
