//! What the tests of the Hopper kernels share: their module, and for attention's the cases and
//! how their tensors lie in memory, inputs, the forward pass in `f64`, and the element types'
//! conversions.
// Each test binary that includes this module uses part of it.
#![allow(dead_code)]

pub mod backward;

use cudarc::driver::CudaContext;
use dlmd::cuda::{CudaError, Kernels, ModuleError};
use dlmd::half::{bf16, f16};
use dlmd_example_hopper_kernels as hk;
use dlmd_tests::gpu;
use std::sync::Arc;

/// The kernels, on a GPU that runs `sm_90a` code.
pub fn hopper() -> Option<(Arc<CudaContext>, Kernels)> {
    let ctx = gpu()?;
    let kernels = hopper_module(&ctx)?;
    Some((ctx, kernels))
}

/// The kernels on `ctx`'s GPU, or `None` after printing that the tests that need them are
/// skipped, where it cannot run `sm_90a` code.
pub fn hopper_module(ctx: &Arc<CudaContext>) -> Option<Kernels> {
    match Kernels::load(ctx, hk::PTX) {
        Ok(kernels) => Some(kernels),
        Err(CudaError::Module(e @ ModuleError::Arch { .. })) => {
            dlmd_tests::skipped(format_args!("not a Hopper GPU: {e}"));
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// How a `b × h × s × d` tensor lies in its buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Order {
    /// `(b, h, s, d)`, contiguous.
    Heads,
    /// `(b, s, h, d)`, contiguous, seen as `(b, h, s, d)`: torch's `transpose(1, 2)`.
    Tokens,
    /// `(b, h, s + 3, d)`, each head's three rows past `s` NaN (in the inputs) or not to be
    /// written (in the output): a box that reached past a head would show them.
    Padded,
}

impl Order {
    /// The buffer's length and the view's strides for extents `[b, h, s, d]`.
    pub fn layout(self, [b, h, s, d]: [usize; 4]) -> (usize, [usize; 4]) {
        match self {
            Order::Heads => (b * h * s * d, [h * s * d, s * d, d, 1]),
            Order::Tokens => (b * s * h * d, [s * h * d, d, h * d, 1]),
            Order::Padded => (b * h * (s + 3) * d, [h * (s + 3) * d, (s + 3) * d, d, 1]),
        }
    }
}

/// An attention call: batch, query heads, key/value heads, query and key lengths, head
/// dimension, causal, and how the tensors lie in memory.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub batch: usize,
    pub heads_q: usize,
    pub heads_kv: usize,
    pub seq_q: usize,
    pub seq_k: usize,
    pub dim: usize,
    pub causal: bool,
    pub order: Order,
}

impl Case {
    pub fn q(&self) -> [usize; 4] {
        [self.batch, self.heads_q, self.seq_q, self.dim]
    }
    pub fn kv(&self) -> [usize; 4] {
        [self.batch, self.heads_kv, self.seq_k, self.dim]
    }
}

pub const fn case(
    [batch, heads_q, heads_kv]: [usize; 3],
    [seq_q, seq_k, dim]: [usize; 3],
    causal: bool,
    order: Order,
) -> Case {
    Case {
        batch,
        heads_q,
        heads_kv,
        seq_q,
        seq_k,
        dim,
        causal,
        order,
    }
}

/// Values in `[-1, 1)` from `seed`, rounded as `to` rounds them.
pub fn values(len: usize, seed: u64, round: impl Fn(f32) -> f32) -> Vec<f32> {
    let mut s = seed | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            round((s >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        })
        .collect()
}

/// `softmax(q · kᵀ · scale) · v` in `f64`, query `i` seeing key `j` where `j < s_k` and, if
/// causal, `j ≤ i + s_k − s_q`, and each row's log-sum-exp `ln Σⱼ e^(q · kⱼ · scale)`; rows
/// that see no key are 0, their log-sum-exp `+∞`.
pub fn reference(c: Case, q: &[f32], k: &[f32], v: &[f32], scale: f64) -> (Vec<f64>, Vec<f64>) {
    let d = c.dim;
    let mut o = vec![0.0; q.len()];
    let mut lse = vec![f64::INFINITY; q.len() / d];
    for b in 0..c.batch {
        for h in 0..c.heads_q {
            let hk = h / (c.heads_q / c.heads_kv);
            let qs = (b * c.heads_q + h) * c.seq_q;
            let ks = (b * c.heads_kv + hk) * c.seq_k;
            for i in 0..c.seq_q {
                let seen = (0..c.seq_k).filter(|&j| !c.causal || j + c.seq_q <= i + c.seq_k);
                let scores: Vec<(usize, f64)> = seen
                    .map(|j| {
                        let dot: f64 = (0..d)
                            .map(|x| f64::from(q[(qs + i) * d + x]) * f64::from(k[(ks + j) * d + x]))
                            .sum();
                        (j, dot * scale)
                    })
                    .collect();
                let Some(max) = scores.iter().map(|s| s.1).reduce(f64::max) else {
                    continue;
                };
                let sum: f64 = scores.iter().map(|s| (s.1 - max).exp()).sum();
                lse[qs + i] = max + sum.ln();
                for &(j, s) in &scores {
                    let p = (s - max).exp() / sum;
                    for x in 0..d {
                        o[(qs + i) * d + x] += p * f64::from(v[(ks + j) * d + x]);
                    }
                }
            }
        }
    }
    (o, lse)
}

/// The element types of the kernels: conversions both ways.
pub trait Input: dlmd::DlElement + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy {
    fn of(x: f32) -> Self;
    fn to(self) -> f32;
}
impl Input for bf16 {
    fn of(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to(self) -> f32 {
        self.to_f32()
    }
}
impl Input for f16 {
    fn of(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to(self) -> f32 {
        self.to_f32()
    }
}

/// `buffer[offset(index)] = value` for each element of a logical `b × h × s × d` array laid
/// out by `strides`.
pub fn scatter<T: Copy>(buffer: &mut [T], logical: &[T], [_, h, s, d]: [usize; 4], strides: [usize; 4]) {
    for (i, &x) in logical.iter().enumerate() {
        let index = [i / (h * s * d), i / (s * d) % h, i / d % s, i % d];
        buffer[(0..4).map(|a| index[a] * strides[a]).sum::<usize>()] = x;
    }
}

/// The logical `b × h × s × d` array of `buffer` laid out by `strides`, and whether every other
/// element of the buffer is still `untouched`.
pub fn gather<T: Copy + PartialEq>(
    buffer: &[T],
    extents: [usize; 4],
    strides: [usize; 4],
    untouched: T,
) -> (Vec<T>, bool) {
    let [_, h, s, d] = extents;
    let mut seen = vec![false; buffer.len()];
    let logical = (0..extents.iter().product())
        .map(|i| {
            let index = [i / (h * s * d), i / (s * d) % h, i / d % s, i % d];
            let at = (0..4).map(|a| index[a] * strides[a]).sum::<usize>();
            seen[at] = true;
            buffer[at]
        })
        .collect();
    let rest = buffer.iter().zip(&seen).all(|(&x, &seen)| seen || x == untouched);
    (logical, rest)
}
