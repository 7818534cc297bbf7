//! Attention's backward pass on the CPU in `f64`, and the cases its GPU tests run: shared by
//! the three-kernel pass's tests and the fused pass's.

use super::{Case, Input, Order, case, gather, reference, scatter, values};
use cudarc::driver::{CudaSlice, CudaStream};
use dlmd::cuda::{TiledMap, device_view_mapped};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::layout::StrideMapping;
use dlmd::{Const, Dims, LayoutStride};
use std::sync::Arc;

/// A tensor on the device and the strides it lies by.
pub type Buffer<T> = (CudaSlice<T>, [usize; 4]);

/// `x` (logical, `extents`) rounded to `T` and laid out as `order` says, `fill` between its
/// rows, on the device.
pub fn upload<T: Input>(
    stream: &Arc<CudaStream>,
    x: &[f32],
    extents: [usize; 4],
    order: Order,
    fill: f32,
) -> Buffer<T> {
    let (len, strides) = order.layout(extents);
    let mut buffer = vec![T::of(fill); len];
    let logical: Vec<T> = x.iter().map(|&x| T::of(x)).collect();
    scatter(&mut buffer, &logical, extents, strides);
    (stream.clone_htod(&buffer).unwrap(), strides)
}

/// A backward pass's tensors on the device: `q`, `k`, `v`, `o` and `do` (NaN between rows), and
/// the gradients `dq`, `dk` and `dv`, `-7` everywhere; `o` and `dv` laid out by [`other`], the
/// rest as the case's order says.
pub fn uploaded<T: Input>(stream: &Arc<CudaStream>, c: Case, x: &Inputs) -> ([Buffer<T>; 5], [Buffer<T>; 3]) {
    let (qe, ke) = (c.q(), c.kv());
    let (same, other) = (c.order, other(c.order));
    let inputs = [
        (&x.q, qe, same),
        (&x.k, ke, same),
        (&x.v, ke, same),
        (&x.o, qe, other),
        (&x.d_o, qe, same),
    ]
    .map(|(x, e, order)| upload(stream, x, e, order, f32::NAN));
    let grads = [(qe, same), (ke, same), (ke, other)]
        .map(|(e, order)| upload(stream, &vec![-7.0; e.iter().product()], e, order, -7.0));
    (inputs, grads)
}

/// The tensor map of `buffer` seen with `extents`, in boxes of `ROWS × D`.
pub fn tiled<T: Input, const ROWS: usize, const D: usize>(
    (data, strides): &Buffer<T>,
    extents: [usize; 4],
) -> TiledMap<'_, T, (Const<ROWS>, Const<D>), Swizzle128, 4> {
    let mapping = StrideMapping::new(Dims::new(extents), *strides).unwrap();
    let view = device_view_mapped::<T, _, LayoutStride>(data, mapping).unwrap();
    TiledMap::new(&view).unwrap()
}

/// A gradient back from the device, as `f32` in logical order, and whether every element
/// outside its view still holds the `-7` it started with.
pub fn download<T: Input + PartialEq>(
    stream: &Arc<CudaStream>,
    (data, strides): &Buffer<T>,
    extents: [usize; 4],
) -> (Vec<f32>, bool) {
    let (logical, rest) = gather(&stream.clone_dtoh(data).unwrap(), extents, *strides, T::of(-7.0));
    (logical.into_iter().map(T::to).collect(), rest)
}

/// The cases of the backward passes' tests.
pub const CASES: [Case; 8] = [
    case([1, 2, 2], [128, 128, 64], false, Order::Heads),
    case([2, 4, 1], [200, 333, 128], true, Order::Tokens),
    case([1, 8, 1], [1, 77, 64], true, Order::Heads),
    case([1, 4, 2], [300, 130, 128], false, Order::Heads),
    case([2, 2, 2], [77, 77, 64], true, Order::Tokens),
    // One key, causal with more queries than keys: all but the last query see none.
    case([1, 4, 4], [130, 1, 64], true, Order::Heads),
    // Query heads of a group apart from those of the others' (`h / group`, not `h % h_kv`).
    case([1, 8, 2], [200, 150, 64], false, Order::Tokens),
    // Causal with more queries than keys at d 128: the first 130 rows see no key; NaN rows
    // between the inputs' heads.
    case([1, 2, 1], [200, 70, 128], true, Order::Padded),
];

/// The layout of `o` and `dv`: another than the case's (that of `q`, `do`, `dq` and `dk`), so
/// that a kernel that wrote `dv` by `dk`'s strides, or read `o` by `do`'s, would show it.
pub fn other(order: Order) -> Order {
    match order {
        Order::Heads | Order::Tokens => Order::Padded,
        Order::Padded => Order::Heads,
    }
}

/// A case's inputs, rounded to `T`: `q`, `k`, `v`, the forward pass's `o` (from the `f64`
/// reference) and `lse`, and `do`.
pub struct Inputs {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub o: Vec<f32>,
    pub lse: Vec<f32>,
    pub d_o: Vec<f32>,
}

pub fn inputs<T: Input>(c: Case, scale: f64) -> Inputs {
    let (rows_q, rows_k) = (c.batch * c.heads_q * c.seq_q, c.batch * c.heads_kv * c.seq_k);
    let round = |x: f32| T::of(x).to();
    let q = values(rows_q * c.dim, 0x1234_5678, round);
    let k = values(rows_k * c.dim, 0x8765_4321, round);
    let v = values(rows_k * c.dim, 0x0bad_cafe, round);
    let (o, lse) = reference(c, &q, &k, &v, scale);
    Inputs {
        o: o.iter().map(|&x| round(x as f32)).collect(),
        lse: lse.iter().map(|&x| x as f32).collect(),
        d_o: values(rows_q * c.dim, 0x5eed_f00d, round),
        q,
        k,
        v,
    }
}

/// The gradients in `f64` of `o = softmax(q · kᵀ · scale) · v` for the output's gradient `do`,
/// with the probabilities recomputed from `lse` and `Δ = Σ do ∘ o` from the `o` given, as the
/// kernels compute them: `Δ`, `dq`, `dk`, `dv`.
pub fn gradients(c: Case, x: &Inputs, scale: f64) -> [Vec<f64>; 4] {
    let d = c.dim;
    let group = c.heads_q / c.heads_kv;
    let dot = |a: &[f32], i: usize, b: &[f32], j: usize| -> f64 {
        (0..d).map(|e| f64::from(a[i * d + e]) * f64::from(b[j * d + e])).sum()
    };
    let mut delta = vec![0.0; x.q.len() / d];
    let (mut dq, mut dk, mut dv) = (vec![0.0; x.q.len()], vec![0.0; x.k.len()], vec![0.0; x.v.len()]);
    for b in 0..c.batch {
        for h in 0..c.heads_q {
            let qs = (b * c.heads_q + h) * c.seq_q;
            let ks = (b * c.heads_kv + h / group) * c.seq_k;
            for i in qs..qs + c.seq_q {
                delta[i] = dot(&x.d_o, i, &x.o, i);
                let lse = f64::from(x.lse[i]);
                if lse.is_infinite() {
                    continue;
                }
                let seen = (0..c.seq_k).filter(|&j| !c.causal || j + c.seq_q <= i - qs + c.seq_k);
                for j in seen.map(|j| ks + j) {
                    let p = (dot(&x.q, i, &x.k, j) * scale - lse).exp();
                    let ds = p * (dot(&x.d_o, i, &x.v, j) - delta[i]);
                    for e in 0..d {
                        dq[i * d + e] += scale * ds * f64::from(x.k[j * d + e]);
                        dk[j * d + e] += scale * ds * f64::from(x.q[i * d + e]);
                        dv[j * d + e] += p * f64::from(x.d_o[i * d + e]);
                    }
                }
            }
        }
    }
    [delta, dq, dk, dv]
}

/// What a run read back: `Δ`, `dq`, `dk` and `dv` as logical arrays, and whether every element
/// of the gradients' buffers outside their views is still `-7`.
pub struct Grads {
    pub delta: Vec<f32>,
    pub dq: Vec<f32>,
    pub dk: Vec<f32>,
    pub dv: Vec<f32>,
    pub rest: bool,
}

/// Checks `got` against the `f64` reference in units `u` of the element type's rounding (`2⁻⁸`
/// for `bf16`, `2⁻¹¹` for `f16`): each element within `4u·(|ref| + m)`, `m` the gradient's own
/// largest magnitude, or a sixteenth of the largest among the three where that is more (a
/// gradient that is zero exactly, as with one key, is matched within rounding at the others'
/// scale), and the mean error below `u·m / 2`. Each gradient is rounded to the type once, and so
/// are the probabilities and their gradient before the products that sum them.
pub fn close(c: Case, got: &[f32], want: &[f64], (u, m): (f64, f64), what: &str) {
    assert_eq!(got.len(), want.len(), "{what} {c:?}");
    let mut total = 0.0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (f64::from(g) - w).abs();
        assert!(
            err <= 4.0 * u * (w.abs() + m),
            "{what} {c:?}: element {i} (row {}) is {g}, expected {w}",
            i / c.dim
        );
        total += err;
    }
    let mean = total / got.len().max(1) as f64;
    assert!(
        mean <= u * m / 2.0,
        "{what} {c:?}: mean error {mean} (largest gradient {m})"
    );
}

/// Asserts a run's gradients against the `f64` reference `want` (`[dq, dk, dv]`), as [`close`]
/// checks each (the unit `u` of the element type's rounding), that nothing was written outside
/// their views, and that a query that sees no key (`lse` `+∞`) has no gradient: zeros, exactly.
pub fn assert_grads(c: Case, x: &Inputs, got: &Grads, want: [&[f64]; 3], u: f64, what: &str) {
    let largest = |g: &[f64]| g.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let floor = want.iter().map(|g| largest(g)).fold(0.0, f64::max) / 16.0;
    let m = |g: &[f64]| largest(g).max(floor);
    let [dq, dk, dv] = want;
    close(c, &got.dq, dq, (u, m(dq)), &format!("{what}: dq"));
    close(c, &got.dk, dk, (u, m(dk)), &format!("{what}: dk"));
    close(c, &got.dv, dv, (u, m(dv)), &format!("{what}: dv"));
    assert!(got.rest, "{what} {c:?}: a gradient written outside its view");
    for (row, _) in x.lse.iter().enumerate().filter(|(_, l)| l.is_infinite()) {
        let dq_row = &got.dq[row * c.dim..(row + 1) * c.dim];
        assert!(
            dq_row.iter().all(|&g| g == 0.0),
            "{what} {c:?}: dq of row {row}, which sees no key: {dq_row:?}"
        );
    }
}
