use super::*;
use crate::toolchain::commit_date;

#[test]
fn externs_are_found() {
    let ptx = "\
.version 7.0
.extern .func _ZN4dlmd5check(
\t.param .b64 p
);
.visible .entry add_index(
";
    assert_eq!(extern_functions(ptx), ["_ZN4dlmd5check"]);
    // The launch's dynamic shared memory is provided by the launch, not missing.
    let shared = ".extern .shared .align 16 .b8 gpu_launch_sized_workgroup_mem[];\n";
    assert!(extern_functions(shared).is_empty());
    // A sized `.extern .shared` array, or an `.extern .global`, is a missing variable.
    assert_eq!(
        extern_functions(".extern .shared .align 4 .b8 table[64];\n"),
        ["table[64];"]
    );
    assert_eq!(
        extern_functions(".extern .global .align 4 .b8 table[];\n"),
        ["table[];"]
    );
    assert!(extern_functions(".visible .entry k(\n)\n{\n\tret;\n}\n").is_empty());
}

#[test]
fn the_commit_date_is_read_and_compared_as_a_date() {
    let version = "rustc 1.97.0-nightly (e50aa6fba 2026-05-19)\nbinary: rustc\ncommit-date: 2026-05-19\nhost: x\n";
    assert_eq!(commit_date(version), Some("2026-05-19"));
    assert!(commit_date(version).unwrap() >= MIN_NIGHTLY_DATE);
    let old = "commit-date: 2026-03-01\n";
    assert!(commit_date(old).unwrap() < MIN_NIGHTLY_DATE);
    // Builds without a date (a local rustc prints `unknown`) are not refused for it.
    assert_eq!(commit_date("commit-date: unknown\n"), None);
    assert_eq!(commit_date("rustc 1.95.0\n"), None);
    let error = BuildError::OldToolchain {
        toolchain: "nightly".into(),
        date: "2026-03-01".into(),
    };
    assert!(error.to_string().contains("rustup update nightly"), "{error}");
}

#[test]
fn dep_info_lists_each_source() {
    let d = "/t/libk.rlib: /src/a.rs /src/with\\ space.rs /src/b.rs\n\n/src/a.rs:\n";
    assert_eq!(
        dep_info_sources(d),
        [
            PathBuf::from("/src/a.rs"),
            "/src/with space.rs".into(),
            "/src/b.rs".into()
        ]
    );
    assert!(dep_info_sources("").is_empty());
}

#[test]
fn features_are_read_as_cargo_lists_them() {
    assert_eq!(
        enabled_features(Some("default,f64,with-dash")),
        ["default", "f64", "with-dash"]
    );
    assert!(enabled_features(Some("")).is_empty());
    assert!(enabled_features(None).is_empty());
}

#[test]
fn the_arch_and_ptx_isa_become_rustc_flags() {
    let build = PtxBuild::new("/k", "k", "/out");
    let features = "-Zallow-features=abi_ptx,asm_experimental_arch,stdarch_nvptx,core_intrinsics,gpu_intrinsics,gpu_launch_sized_workgroup_mem";
    assert_eq!(
        build.codegen_args().unwrap(),
        ["--emit=asm", "-Ctarget-cpu=sm_70", features]
    );
    let build = build.arch("sm_90a").ptx_isa(8, 0);
    assert_eq!(
        build.codegen_args().unwrap(),
        ["--emit=asm", "-Ctarget-cpu=sm_90a", features, "-Ctarget-feature=+ptx80"]
    );
    assert!(matches!(
        build.clone().ptx_isa(7, 8).codegen_args(),
        Err(BuildError::PtxIsaTooOld { needs: (8, 0), .. })
    ));
    assert!(matches!(
        build.clone().ptx_isa(8, 9).codegen_args(),
        Err(BuildError::PtxIsa((8, 9)))
    ));
    assert!(matches!(build.arch("sm_91").codegen_args(), Err(BuildError::Arch(a)) if a == "sm_91"));
}

#[test]
fn outside_a_build_script_is_an_error() {
    // `cargo test` sets the manifest directory for tests, not the output directory.
    assert!(matches!(PtxBuild::try_from_env(), Err(BuildError::Env("OUT_DIR"))));
}

#[test]
fn the_assembly_is_the_one_of_the_feature_set_cargo_just_built() {
    let artifact = |name: &str, files: &[&str], fresh: bool| {
        let files: Vec<String> = files.iter().map(|f| format!("\"{f}\"")).collect();
        format!(
            r#"{{"reason":"compiler-artifact","target":{{"name":"{name}"}},"filenames":[{}],"fresh":{fresh}}}"#,
            files.join(",")
        )
    };
    let deps = "/w/target/dlmd-nvptx/nvptx64-nvidia-cuda-noatomic/release";
    let messages = [
        artifact("core", &[&format!("{deps}/deps/libcore-0011.rmeta")], true),
        // A crate whose name starts with the kernel crate's.
        artifact(
            "kernels_extra",
            &[&format!("{deps}/deps/libkernels_extra-aa00.rmeta")],
            true,
        ),
        r#"{"reason":"build-finished","success":true}"#.to_string(),
        artifact(
            "kernels",
            &[
                &format!("{deps}/libkernels.rlib"),
                &format!("{deps}/deps/libkernels-d91d597f.rmeta"),
            ],
            false,
        ),
    ]
    .join("\n");
    assert_eq!(artifact_hash(&messages, "kernels"), Some("d91d597f"));
    assert_eq!(artifact_hash(&messages, "kernels_extra"), Some("aa00"));
    // Windows paths, their separators escaped in JSON.
    let windows = artifact(
        "kernels",
        &[r"C:\\w\\target\\release\\deps\\libkernels-77ab.rlib"],
        true,
    );
    assert_eq!(artifact_hash(&windows, "kernels"), Some("77ab"));
    // Only the uplifted copy (no hash), a file of another kind, or no artifact message: none.
    assert_eq!(
        artifact_hash(
            &artifact("kernels", &[&format!("{deps}/libkernels.rlib")], true),
            "kernels"
        ),
        None
    );
    assert_eq!(
        artifact_hash(
            &artifact("kernels", &[&format!("{deps}/deps/libkernels-77ab.d")], true),
            "kernels"
        ),
        None
    );
    assert_eq!(artifact_hash(&messages, "other"), None);
    assert_eq!(
        artifact_hash(
            r#"{"reason":"compiler-message","x":"/libkernels-77ab.rlib"}"#,
            "kernels"
        ),
        None
    );
}

#[test]
fn the_kernels_target_is_nvptx64_with_no_atomics() {
    // The nightly toolchain's own rustc, as a build uses it.
    let dir = std::env::temp_dir().join(format!("dlmd-build-target-{}", std::process::id()));
    let spec = kernel_target_spec("nightly", &dir).unwrap();
    assert_eq!(spec.file_stem().unwrap(), TARGET);
    use std::os::unix::fs::MetadataExt;
    let before = std::fs::metadata(&spec).unwrap().ino();
    // Written again with the same contents, the file is left as it is (a rewrite is a rename,
    // a new inode).
    assert_eq!(kernel_target_spec("nightly", &dir).unwrap(), spec);
    assert_eq!(std::fs::metadata(&spec).unwrap().ino(), before);
    let cfg = Command::new("rustup")
        .args([
            "run",
            "nightly",
            "rustc",
            "-Zunstable-options",
            "--print",
            "cfg",
            "--target",
        ])
        .arg(&spec)
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .unwrap();
    let cfg = String::from_utf8(cfg.stdout).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(cfg.contains("target_arch=\"nvptx64\""), "{cfg}");
    assert!(cfg.contains("target_os=\"cuda\""), "{cfg}");
    assert!(!cfg.contains("target_has_atomic"), "{cfg}");
}
