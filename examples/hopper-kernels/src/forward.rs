//! Attention's forward pass from the host: [`attention_forward`] checks the views' extents and
//! the scale, each mismatch its own [`AttentionError`] (the kernels leave their outputs as they
//! are where the extents do not fit, which a caller could not tell from the result), makes the
//! tensor maps, chooses the kernel of the element type and head dimension, and launches it on a
//! grid of one block a chunk of query rows of a head ([`forward_chunk`](crate::forward_chunk)),
//! or where not causal at most one block a multiprocessor ([`spread_chunks`](crate::spread_chunks)),
//! in a scope that waits for it.

use crate::{AttentionLse, AttentionOut};
use cudarc::driver::{CudaContext, CudaStream};
use dlmd::cuda::{self, CudaError, Kernels, LaunchConfig, TensorMapError, TiledMap};
use dlmd::dlpack::DLDataType;
use dlmd::half::{bf16, f16};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, DeviceMdspan, Dims, DlElement, LayoutStride};
use std::sync::Arc;

/// `q`, `k` or `v`: `b × h × s × d` on the device, any strides a tensor map takes.
pub type AttentionIn<'a, T> = DeviceMdspan<'a, T, Dims<4>, LayoutStride>;

/// Why [`attention_forward`] refuses a call. Extents are outermost first: `[b, h, s, d]`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttentionError {
    /// The kernels are compiled for head dimensions 64 and 128.
    #[error("q's head dimension is {dim}: the kernels take 64 or 128")]
    HeadDim { dim: usize },
    /// `k` and `v` are the keys and values of one sequence: the same extents.
    #[error("k is {k:?} and v is {v:?}: the keys and values have the same extents")]
    KeysValues { k: [usize; 4], v: [usize; 4] },
    /// `q` and `k` are of one batch, of one head dimension, and `k`'s heads divide `q`'s
    /// (grouped-query attention; multi-query with one).
    #[error("q is {q:?} and k is {k:?}: the same batch and head dimension, and k's heads dividing q's")]
    QueriesKeys { q: [usize; 4], k: [usize; 4] },
    /// Queries with no key: each query's softmax is over at least one key.
    #[error("k is {k:?} where q is {q:?}: each query needs at least one key (s_k > 0)")]
    NoKeys { q: [usize; 4], k: [usize; 4] },
    /// `o` is one row for each query: `q`'s extents.
    #[error("o is {o:?} where q is {q:?}: the output has the queries' extents")]
    Output { q: [usize; 4], o: [usize; 4] },
    /// `lse` is one value for each query: `q`'s extents but the last.
    #[error("lse is {lse:?} where q is {q:?}: one log-sum-exp for each query row, [b, h, s]")]
    Lse { q: [usize; 4], lse: [usize; 3] },
    /// The softmax scale multiplies the scores before each row's maximum is taken out.
    #[error("the softmax scale is {scale}: it must be positive and finite")]
    Scale { scale: f32 },
    /// A view the copy engine cannot read: `which` is `"q"`, `"k"` or `"v"`.
    #[error("{which}: {source}")]
    Map {
        which: &'static str,
        #[source]
        source: TensorMapError,
    },
    /// An imported tensor is not of the rank the call takes (`q`, `k`, `v` and `o` 4, `lse`
    /// 3), has no shape, or has a negative extent.
    #[error("{which} has shape {shape:?}: the call takes a tensor of rank {rank}, each extent 0 or more")]
    Shape {
        which: &'static str,
        shape: Vec<i64>,
        rank: usize,
    },
    /// The imported `q`'s element type has no kernel: `bf16` and `f16` do.
    #[error("q's data type is {dtype}: the kernels take bfloat16 and float16")]
    DataType { dtype: DLDataType },
    /// An imported tensor refused as its kernel argument (its element type, strides, device,
    /// memory, or that it may be written): `which` is `"q"`, `"k"`, `"v"`, `"o"` or `"lse"`.
    #[error("{which}: {source}")]
    Argument {
        which: &'static str,
        #[source]
        source: CudaError,
    },
    /// A gradient of the backward pass is not of its tensor's extents: `do` and `dq` are
    /// `q`'s, `dk` and `dv` `k`'s.
    #[error("{which} is {found:?}: the gradient has the extents {expected:?} of its tensor")]
    Gradient {
        which: &'static str,
        expected: [usize; 4],
        found: [usize; 4],
    },
    /// Packed sequences ([`attention_varlen_forward_imported`](crate::attention_varlen_forward_imported))
    /// are rows of one batch entry: `q`, `k`, `v` and `o` are `[1, h, total, d]`.
    #[error("{which} is of batch {batch}: packed sequences are rows of one batch entry, [1, h, total, d]")]
    Packed { which: &'static str, batch: usize },
    /// The cumulative sequence lengths of the queries and of the keys are `b + 1` offsets
    /// each, for the same `b` sequences (`b` may be 0).
    #[error("cu_seqlens_q has {q} offsets and cu_seqlens_k {k}: one more than the sequences, as many for both")]
    Offsets { q: usize, k: usize },
    /// The launch itself.
    #[error(transparent)]
    Cuda(#[from] CudaError),
}

/// Checks the extents of a call and its scale: `q` and `o` `b × h_q × s_q × d`, `k` and `v`
/// `b × h_kv × s_k × d` with `h_kv` dividing `h_q`, `lse` `b × h_q × s_q`, `d` 64 or 128, the
/// scale positive and finite. What the kernels check, as errors.
pub fn check_attention([q, k, v, o]: [[usize; 4]; 4], lse: [usize; 3], scale: f32) -> Result<(), AttentionError> {
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(AttentionError::Scale { scale });
    }
    if q[3] != 64 && q[3] != 128 {
        return Err(AttentionError::HeadDim { dim: q[3] });
    }
    if k != v {
        return Err(AttentionError::KeysValues { k, v });
    }
    if k[0] != q[0] || k[3] != q[3] || k[1] == 0 || !q[1].is_multiple_of(k[1]) {
        return Err(AttentionError::QueriesKeys { q, k });
    }
    if k[2] == 0 && q[0] * q[1] * q[2] > 0 {
        return Err(AttentionError::NoKeys { q, k });
    }
    if o != q {
        return Err(AttentionError::Output { q, o });
    }
    if lse != [q[0], q[1], q[2]] {
        return Err(AttentionError::Lse { q, lse });
    }
    Ok(())
}

/// The element types of the attention kernels, `bf16` and `f16`: each launches its own.
pub trait AttentionElement: DlElement + sealed::Sealed {
    /// Launches the kernel of head dimension `d` (64 or 128, checked) on `stream`, waiting for
    /// it, with checked views.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn launch(
        stream: &Arc<CudaStream>,
        kernels: &Kernels,
        qkv: [&AttentionIn<'_, Self>; 3],
        o: AttentionOut<'_, Self>,
        lse: AttentionLse<'_>,
        scale: f32,
        causal: bool,
        config: LaunchConfig,
        twin: Twin,
    ) -> Result<(), AttentionError>;
}

/// Which kernel of a pair runs: the safe one or its raw twin ([`attention_forward_raw`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Twin {
    Safe,
    Raw,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::bf16 {}
    impl Sealed for super::f16 {}
}

/// The tensor map of `view` for tiles of `ROWS × D`, its errors named after `which`.
fn map<'a, T: DlElement, const ROWS: usize, const D: usize>(
    view: &AttentionIn<'a, T>,
    which: &'static str,
) -> Result<TiledMap<'a, T, (Const<ROWS>, Const<D>), Swizzle128, 4>, AttentionError> {
    TiledMap::new(view).map_err(|source| AttentionError::Map { which, source })
}

macro_rules! attention_element {
    ($t:ty, $d64:ident, $args64:ident, $d128:ident, $args128:ident,
     $raw64:ident, $raw_args64:ident, $raw128:ident, $raw_args128:ident) => {
        impl AttentionElement for $t {
            fn launch(
                stream: &Arc<CudaStream>,
                kernels: &Kernels,
                [q, k, v]: [&AttentionIn<'_, Self>; 3],
                mut o: AttentionOut<'_, Self>,
                mut lse: AttentionLse<'_>,
                scale: f32,
                causal: bool,
                config: LaunchConfig,
                twin: Twin,
            ) -> Result<(), AttentionError> {
                macro_rules! run {
                    ($kernel:ident, $args:ident, $rows:expr, $d:literal, $config:expr) => {{
                        let (qm, km, vm) = (
                            map::<_, { $rows }, $d>(q, "q")?,
                            map::<_, 128, $d>(k, "k")?,
                            map::<_, 128, $d>(v, "v")?,
                        );
                        cuda::scope(|s| {
                            crate::$kernel(
                                s.launch(stream, kernels, $config),
                                crate::$args {
                                    q: qm.map(),
                                    k: km.map(),
                                    v: vm.map(),
                                    o: o.as_view_mut(),
                                    lse: lse.as_view_mut(),
                                    scale,
                                    causal,
                                },
                            )
                        })?;
                        Ok(())
                    }};
                }
                let raw = |d| LaunchConfig {
                    shared_mem_bytes: crate::raw_attention_shared_bytes(d),
                    ..config
                };
                match (q.extents().0[3] == 64, twin) {
                    (true, Twin::Safe) => run!($d64, $args64, crate::forward_chunk(64).rows, 64, config),
                    (false, Twin::Safe) => run!($d128, $args128, crate::forward_chunk(128).rows, 128, config),
                    (true, Twin::Raw) => run!($raw64, $raw_args64, crate::forward_chunk(64).rows, 64, raw(64)),
                    (false, Twin::Raw) => run!(
                        $raw128,
                        $raw_args128,
                        crate::forward_chunk(128).rows,
                        128,
                        raw(128)
                    ),
                }
            }
        }
    };
}

attention_element!(
    bf16,
    attention_bf16_d64,
    AttentionBf16D64Args,
    attention_bf16_d128,
    AttentionBf16D128Args,
    attention_raw_bf16_d64,
    AttentionRawBf16D64Args,
    attention_raw_bf16_d128,
    AttentionRawBf16D128Args
);
attention_element!(
    f16,
    attention_f16_d64,
    AttentionF16D64Args,
    attention_f16_d128,
    AttentionF16D128Args,
    attention_raw_f16_d64,
    AttentionRawF16D64Args,
    attention_raw_f16_d128,
    AttentionRawF16D128Args
);

/// `o = softmax(q · kᵀ · scale) · v` and each query row's log-sum-exp into `lse`, by the
/// kernel of `T` and `q`'s head dimension (64 or 128), on `stream`, returning once it is done:
/// `q` and `o` `b × h_q × s_q × d`, `k` and `v` `b × h_kv × s_k × d` (`h_kv` dividing `h_q`),
/// `lse` `b × h_q × s_q`, `causal` aligned to the bottom right (query `i` sees keys
/// `j ≤ i + s_k − s_q`). Each refusal is an [`AttentionError`], before anything runs; no query
/// is no work.
///
/// ```ignore
/// attention_forward(&stream, &kernels, [&q, &k, &v], o, lse, 1.0 / 128f32.sqrt(), true)?;
/// ```
pub fn attention_forward<T: AttentionElement>(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    [q, k, v]: [&AttentionIn<'_, T>; 3],
    o: AttentionOut<'_, T>,
    lse: AttentionLse<'_>,
    scale: f32,
    causal: bool,
) -> Result<(), AttentionError> {
    forward_by(stream, kernels, [q, k, v], (o, lse), scale, causal, Twin::Safe)
}

/// [`attention_forward`] by the raw twin of the kernel (`attention_raw_*`: the same work
/// written over raw instructions and addresses, with [`raw_attention_shared_bytes`](crate::raw_attention_shared_bytes)
/// of dynamic shared memory, on the safe kernels' grids): the reference the safe kernels are
/// timed against. The same checks, the same results.
pub fn attention_forward_raw<T: AttentionElement>(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    [q, k, v]: [&AttentionIn<'_, T>; 3],
    o: AttentionOut<'_, T>,
    lse: AttentionLse<'_>,
    scale: f32,
    causal: bool,
) -> Result<(), AttentionError> {
    forward_by(stream, kernels, [q, k, v], (o, lse), scale, causal, Twin::Raw)
}

/// The checks of a forward call, then its launch by `twin`'s kernel.
fn forward_by<T: AttentionElement>(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    [q, k, v]: [&AttentionIn<'_, T>; 3],
    (o, lse): (AttentionOut<'_, T>, AttentionLse<'_>),
    scale: f32,
    causal: bool,
    twin: Twin,
) -> Result<(), AttentionError> {
    let extents = [q.extents().0, k.extents().0, v.extents().0, o.extents().0];
    check_attention(extents, lse.extents().0, scale)?;
    // The raw twins take the safe kernels' chunks and blocks.
    let Some(config) = forward_grid(extents[0]) else {
        return Ok(());
    };
    let config = spread_chunks(config, causal, || multiprocessors(stream.context()));
    T::launch(stream, kernels, [q, k, v], o, lse, scale, causal, config, twin)
}

/// The launch of a call whose rows are `[b, h, s, d]`: one block of `threads` a chunk of
/// `rows` rows of a head, at most as many as a grid holds (each block then takes the chunks
/// `c % blocks`); `None` where there is no row.
fn chunked([b, h, s, _]: [usize; 4], rows: usize, threads: u32) -> Option<LaunchConfig> {
    let chunks = b.saturating_mul(h).saturating_mul(s.div_ceil(rows));
    (chunks > 0).then(|| LaunchConfig {
        grid_dim: (chunks.min(i32::MAX as usize) as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// The multiprocessors of `ctx`'s device, where the driver tells (a positive count).
pub fn multiprocessors(ctx: &CudaContext) -> Option<u32> {
    use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    let count = ctx.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).ok()?;
    u32::try_from(count).ok().filter(|&n| n > 0)
}

/// The launch `config` of an attention kernel over chunks of equal work (not `causal`) spread
/// over the device's multiprocessors (`multiprocessors`, asked only then): at most one block
/// each, each taking the chunks `c % blocks`, so that a block's producer loads its next chunk's
/// tiles while its consumers finish the last, where a block a chunk starts each chunk with an
/// empty pipeline. Each of these kernels' blocks holds a multiprocessor alone (its registers,
/// 384 or 512 threads at the split `setmaxnreg` makes, and at head dimension 128 its shared
/// memory too), so the cap leaves none idle. Causal, chunks differ in work and that split
/// would be uneven (chunk `c` and `c + blocks` are often the same part of the diagonal): a
/// block a chunk, as where the count is unknown.
///
/// The split is static: it assumes the kernel has the device to itself. Beside other work (a
/// second stream's kernels) a block that starts late runs its whole share late, where blocks
/// of a chunk each are scheduled as multiprocessors free up.
pub fn spread_chunks(
    config: LaunchConfig,
    causal: bool,
    multiprocessors: impl FnOnce() -> Option<u32>,
) -> LaunchConfig {
    if causal {
        return config;
    }
    let Some(count) = multiprocessors() else {
        return config;
    };
    LaunchConfig {
        grid_dim: (
            config.grid_dim.0.min(count.max(1)),
            config.grid_dim.1,
            config.grid_dim.2,
        ),
        ..config
    }
}

/// The launch of a backward kernel (safe or raw) over `[b, h, s, d]`: one block of 384
/// threads a chunk of 128 rows of a head.
pub(crate) fn grid(extents: [usize; 4]) -> Option<LaunchConfig> {
    chunked(extents, 128, 384)
}

/// The launch of the safe forward pass over queries `[b, h, s, d]`: a block of
/// [`forward_chunk`](crate::forward_chunk)`(d).threads` a chunk of its `rows` query rows of a
/// head.
pub(crate) fn forward_grid(extents: [usize; 4]) -> Option<LaunchConfig> {
    let chunk = crate::forward_chunk(extents[3]);
    chunked(extents, chunk.rows, chunk.threads)
}

#[cfg(test)]
mod tests {
    use super::{AttentionError, LaunchConfig, check_attention, forward_grid, grid, spread_chunks};

    const Q: [usize; 4] = [2, 8, 300, 128];
    const KV: [usize; 4] = [2, 2, 77, 128];
    const LSE: [usize; 3] = [2, 8, 300];

    #[test]
    fn the_forward_grid_has_a_block_for_each_chunk_of_its_head_dimension() {
        let shape = |c: Option<LaunchConfig>| c.map(|c| (c.grid_dim.0, c.block_dim.0));
        // Head dimension 64: chunks of 192 rows, three consumer warpgroups and the producer;
        // the backward kernels take chunks of 128 rows with two.
        assert_eq!(shape(forward_grid([2, 3, 150, 64])), Some((2 * 3, 512)));
        assert_eq!(shape(grid([2, 3, 150, 64])), Some((2 * 3 * 2, 384)));
        assert_eq!(shape(forward_grid([2, 3, 193, 64])), Some((2 * 3 * 2, 512)));
        assert_eq!(shape(forward_grid([1, 1, 192, 64])), Some((1, 512)));
        // 128: chunks of 128 rows, two consumers.
        assert_eq!(shape(forward_grid([2, 3, 129, 128])), Some((2 * 3 * 2, 384)));
        // No query, no launch; more chunks than a grid holds, a full grid.
        assert_eq!(shape(forward_grid([4, 0, 10, 64])), None);
        assert_eq!(shape(forward_grid([0, 8, 10, 128])), None);
        assert_eq!(
            shape(forward_grid([usize::MAX, 2, 1000, 64])),
            Some((i32::MAX as u32, 512))
        );
    }

    #[test]
    fn a_grid_is_spread_over_the_multiprocessors_where_the_chunks_are_alike() {
        let config = forward_grid([4, 32, 4096, 64]).unwrap();
        assert_eq!(config.grid_dim.0, 4 * 32 * 22);
        let spread_over = |sms: u32, causal| spread_chunks(config, causal, || Some(sms));
        // Not causal: one block a multiprocessor, the rest of the launch as it was.
        assert_eq!(spread_over(132, false).grid_dim, (132, 1, 1));
        assert_eq!(spread_over(132, false).block_dim, config.block_dim);
        // Causal: a block a chunk.
        assert_eq!(spread_over(132, true).grid_dim, config.grid_dim);
        // Fewer chunks than multiprocessors, or a count of 0: every chunk, at least a block.
        let small = forward_grid([1, 2, 100, 128]).unwrap();
        assert_eq!(spread_chunks(small, false, || Some(132)).grid_dim, (2, 1, 1));
        assert_eq!(spread_chunks(small, false, || Some(0)).grid_dim, (1, 1, 1));
        // A count the driver does not give: a block a chunk; causal, the count is not asked.
        assert_eq!(spread_chunks(config, false, || None).grid_dim, config.grid_dim);
        assert_eq!(
            spread_chunks(config, true, || panic!("asked")).grid_dim,
            config.grid_dim
        );
    }

    #[test]
    fn a_call_that_fits_passes() {
        check_attention([Q, KV, KV, Q], LSE, 0.088).unwrap();
        // Multi-query, one query, one key, head dimension 64.
        let (q, kv) = ([1, 4, 1, 64], [1, 1, 1, 64]);
        check_attention([q, kv, kv, q], [1, 4, 1], 1.0).unwrap();
    }

    #[test]
    fn each_mismatch_is_named() {
        let err = |extents, lse, scale| check_attention(extents, lse, scale).unwrap_err();
        for scale in [0.0, -0.1, f32::NAN, f32::INFINITY] {
            assert!(matches!(err([Q, KV, KV, Q], LSE, scale), AttentionError::Scale { .. }));
        }
        let q = [2, 8, 300, 96];
        assert!(matches!(
            err([q, KV, KV, q], LSE, 1.0),
            AttentionError::HeadDim { dim: 96 }
        ));
        let v = [2, 2, 78, 128];
        assert!(matches!(
            err([Q, KV, v, Q], LSE, 1.0),
            AttentionError::KeysValues { .. }
        ));
        for k in [[2, 3, 77, 128], [2, 0, 77, 128], [1, 2, 77, 128], [2, 2, 77, 64]] {
            let e = err([Q, k, k, Q], LSE, 1.0);
            assert!(matches!(e, AttentionError::QueriesKeys { .. }), "{k:?}: {e}");
        }
        let (q, k) = ([2, 8, 3, 128], [2, 2, 0, 128]);
        assert!(matches!(
            err([q, k, k, q], [2, 8, 3], 1.0),
            AttentionError::NoKeys { .. }
        ));
        // No query: no key needed.
        check_attention([[2, 8, 0, 128], k, k, [2, 8, 0, 128]], [2, 8, 0], 1.0).unwrap();
        let o = [2, 8, 301, 128];
        assert!(matches!(err([Q, KV, KV, o], LSE, 1.0), AttentionError::Output { .. }));
        for lse in [[2, 8, 299], [2, 9, 300], [1, 8, 300]] {
            assert!(matches!(err([Q, KV, KV, Q], lse, 1.0), AttentionError::Lse { .. }));
        }
        let message = err([Q, [2, 3, 77, 128], [2, 3, 77, 128], Q], LSE, 1.0).to_string();
        assert!(
            message.contains("[2, 3, 77, 128]") && message.contains("dividing"),
            "{message}"
        );
    }
}
