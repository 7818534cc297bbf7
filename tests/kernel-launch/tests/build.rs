//! Kernel crates built for `nvptx64` against their launchers, on the CPU: the digest a launch
//! compares, the features the nested build gets, and kernels that race refused by that build.

use dlmd::cuda::signature_digests;
use dlmd_build::{BuildError, PtxBuild};
use dlmd_test_kernels_other as other;
use dlmd_test_kernels_real as real;
use std::path::{Path, PathBuf};

/// A fixture kernel crate's directory.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels").join(name)
}

/// Where the nested builds of these tests go: the one the workspace's own kernel crates were
/// built in (`TARGET/dlmd-nvptx`, beside `TARGET/tmp`), whose `core` and `dlmd` for `nvptx64`
/// every feature set and crate shares: only the fixture crates are compiled here.
fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("dlmd-nvptx")
}

/// The PTX of entry point `name`: from its `.entry` line to its closing brace.
fn entry<'p>(ptx: &'p str, name: &str) -> &'p str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no entry point {name}"));
    let end = ptx[start..].find("\n}").map_or(ptx.len(), |e| start + e);
    &ptx[start..end]
}

/// The `scale` kernel's instruction lines of a PTX file.
fn multiplies(ptx: &str) -> Vec<&str> {
    ptx.lines().map(str::trim).filter(|l| l.starts_with("mul.")).collect()
}

#[test]
fn the_nested_build_has_the_dependants_features() {
    // The dependant turned `single` on: the launcher is f32, and so is the kernel (a nested
    // build with the crate's defaults would have made it f64).
    assert_eq!(size_of::<real::Real>(), 4);
    let digests = signature_digests(real::PTX);
    assert_eq!(digests.get("scale"), Some(&real::scale__dlmd_signature));
    let muls = multiplies(real::PTX);
    assert!(muls.iter().any(|l| l.contains(".f32")), "an f32 multiply: {muls:?}");
    assert!(!muls.iter().any(|l| l.contains(".f64")), "no f64 multiply: {muls:?}");
}

#[test]
fn every_kernel_of_a_crate_has_its_digest_read() {
    // Whatever form LLVM writes a digest in (a `u64`, eight bytes, fewer bytes where the last
    // are zeros), each entry point's is found, and equals the launcher's.
    let ptx = dlmd_example_kernels::PTX;
    let entries: Vec<&str> = ptx
        .lines()
        .filter_map(|l| l.strip_prefix(".visible .entry ")?.strip_suffix('('))
        .collect();
    let digests = signature_digests(ptx);
    assert!(entries.len() >= 10, "{entries:?}");
    for entry in &entries {
        assert!(digests.contains_key(*entry), "{entry}: {digests:?}");
    }
    assert_eq!(digests["matmul"], dlmd_example_kernels::matmul__dlmd_signature);
    assert_eq!(digests["add_index"], dlmd_example_kernels::add_index__dlmd_signature);
}

#[test]
fn a_kernel_built_with_other_features_has_another_digest() {
    // The PTX of the same source with the crate's defaults (`single` off), built beside the
    // dependant's (`single` on) in the same directory: the tokens of the signature are the
    // same (`Real`), the types are not, and neither is the digest the launch compares.
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-f64");
    let ptx = PtxBuild::new(fixture("real"), "dlmd-test-kernels-real", &out)
        .features(std::iter::empty::<String>())
        .target_dir(target_dir())
        .build()
        .expect("the fixture builds with f64")
        .expect("a PTX path");
    let ptx = std::fs::read_to_string(ptx).unwrap();
    assert!(
        multiplies(&ptx).iter().any(|l| l.contains(".f64")),
        "the f64 build multiplies f64s"
    );
    let f64_digest = signature_digests(&ptx)["scale"];
    assert_ne!(
        f64_digest,
        real::scale__dlmd_signature,
        "a launcher of f32 and a kernel of f64"
    );
    assert_ne!(f64_digest, signature_digests(real::PTX)["scale"]);
}

#[test]
fn kernels_of_one_name_and_other_signatures_have_other_digests() {
    assert_ne!(real::scale__dlmd_signature, other::scale__dlmd_signature);
    assert_eq!(signature_digests(other::PTX)["scale"], other::scale__dlmd_signature);
    assert_ne!(signature_digests(other::PTX)["scale"], real::scale__dlmd_signature);
}

#[test]
fn parameters_named_like_the_macros_locals_are_each_read_from_their_own_parameter() {
    // `own_names` takes a view and eight scalars, named like what `#[dlmd::kernel]` names its
    // own locals; each scalar is stored, so each of `param_1` to `param_8` is read, once.
    let body = entry(other::PTX, "own_names");
    for n in 1..=8 {
        let param = format!("[own_names_param_{n}]");
        assert_eq!(body.matches(&param).count(), 1, "{param} is read once: {body}");
    }
    assert!(!body.contains("own_names_param_9"), "{body}");
}

#[test]
fn kernels_that_race_do_not_compile_for_the_gpu() {
    let dir = fixture("misuse");
    let source = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("misuse");
    let log = match PtxBuild::new(&dir, "dlmd-test-kernels-misuse", &out)
        .target_dir(target_dir())
        .build()
    {
        Err(BuildError::Compile { log }) => log,
        other => panic!("the racing kernels built: {other:?}"),
    };
    // Each error, by the line it points at.
    let errors: Vec<(usize, &str)> = log
        .split("\nerror")
        .filter_map(|block| {
            let at = block.find("src/lib.rs:")? + "src/lib.rs:".len();
            let line = block[at..].split(':').next()?.parse().ok()?;
            Some((line, block.lines().next().unwrap_or("")))
        })
        .collect();
    let refused = dlmd_tests_kernels::assert_marked_errors(&source, "refused", &errors, &log);
    assert_eq!(refused, 10);
}

#[test]
fn a_barrier_after_a_thread_dependent_branch_stays_one_barrier() {
    // `reverse_blocks` branches on each thread's index, then meets at a barrier: a compiler that
    // copied the barrier into the arms would leave two (rust#137086), and the block could hang.
    let body = entry(dlmd_example_kernels::PTX, "reverse_blocks");
    let barrier = body.find("bar.sync").expect("a barrier");
    assert!(
        body[..barrier].contains("@%p"),
        "a conditional branch before the barrier: {body}"
    );
    assert_eq!(body.matches("bar.sync").count(), 1, "{body}");
}

#[test]
fn a_cooperative_kernel_keeps_its_tiles_and_reduction_scratch_in_shared_memory_its_launcher_reserves() {
    use dlmd::kernel::{Block, Context};
    // 512 bytes of reduction scratch, then a 64 × 64 tile of f32 whose rows are 65 apart (63
    // padded rows and the last one, rounded up to 128 bytes): what the launcher reserves as the
    // launch's dynamic shared memory.
    type Transpose = Block<'static, 256, dlmd_example_kernels::TransposeTile, dlmd_example_kernels::Square64>;
    let bytes = Transpose::SHARED_BYTES;
    assert_eq!(bytes, 512 + ((63 * 65 + 64) * 4usize).div_ceil(128) * 128);
    assert_eq!(<Transpose as Context<'static>>::SHARED_BYTES as usize, bytes);
    assert_eq!(<dlmd::kernel::Thread as Context<'static>>::SHARED_BYTES, 0);
    // The module declares the dynamic shared memory once, and names nothing else it lacks.
    let ptx = dlmd_example_kernels::PTX;
    let externs: Vec<&str> = ptx.lines().filter(|l| l.starts_with(".extern")).collect();
    assert_eq!(
        externs,
        [".extern .shared .align 128 .b8 gpu_launch_sized_workgroup_mem[];"]
    );
    // The compiler knows the tile as shared memory: the tile is written and read with
    // `st.shared`/`ld.shared`, and nothing else is (the views are global memory).
    let body = entry(ptx, "transpose_tiled");
    // Four runs of four neighbours a thread, read as vectors where aligned (each run has two
    // such loads: one where the view's start and strides make every run aligned, one where
    // only the run's own address is), written to the tile element by element (its rows are 65
    // long); then, one run a step, four elements read down a column of the tile and written to
    // `dst` as one vector where aligned.
    assert_eq!(body.matches("ld.global.nc.v4.b32").count(), 8, "{body}");
    assert_eq!(body.matches("st.shared.b32").count(), 16, "{body}");
    assert_eq!(body.matches("ld.shared.b32").count(), 4, "{body}");
    assert_eq!(body.matches("st.global.v4.b32").count(), 1, "{body}");
    assert_eq!(
        body.matches("bar.sync").count(),
        2,
        "one barrier after the tile is written, one before it is again"
    );
    // A block reduction: one barrier, warp shuffles with immediate lane masks, and the warps'
    // sums through shared memory.
    let body = entry(ptx, "row_sums_block");
    assert_eq!(body.matches("bar.sync").count(), 1, "{body}");
    assert!(body.contains("shfl.sync.bfly.b32"), "{body}");
    assert!(body.contains("st.shared.b32"), "{body}");
    // The row is read four neighbours at a time, by streaming loads that keep no line in L1.
    assert!(body.contains("ld.global.cs.nc.v4.b32"), "{body}");
    // The matrix product reads its tiles in runs of four, each one vector load (two steps of
    // `k`, four runs each), and no element alone.
    let body = entry(ptx, "matmul");
    assert_eq!(body.matches("ld.shared.v4.b32").count(), 8, "{body}");
    assert_eq!(body.matches("ld.shared.b32").count(), 0, "{body}");
}
