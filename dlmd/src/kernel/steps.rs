//! Steps written out by the compiler, not as text: [`unrolled!`] is [`unroll!`](crate::unroll)
//! for a body whose copies would cost the compiler more than their code is worth.
//!
//! `unroll!` copies its body as text, once a step, so nested ones multiply: the `mma.sync`
//! accumulator store's two nests of `FM × FN × 2` and `FM × FN × 4` steps are 1,536 copies at
//! 16 × 16, each with its closures, which rustc type-checks one by one, together (it took two
//! of the crate's five minutes for `nvptx64`). `unrolled!` calls its body as a closure once a
//! step; the closure and [`each`] are always inlined, so each step still indexes the
//! registers with a constant (no local memory), and the body is checked once. LLVM schedules
//! what it makes of it otherwise, though, so the hot loops, and every store whose code it
//! would change, keep `unroll!`.

/// `step(0)`, `step(1)`, … `step(count - 1)`: where `count` is a constant, as it is in
/// [`unrolled!`], each call has a constant argument once this is inlined (it always is), and
/// the calls past `count` are dropped. At most 16 steps: the macro checks `count` when it
/// compiles.
#[inline(always)]
pub(crate) fn each(count: usize, mut step: impl FnMut(usize)) {
    macro_rules! steps {
        ($($k:literal)*) => {
            $(
                if $k < count {
                    step($k);
                }
            )*
        };
    }
    steps!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
}

/// `$body` with `$i` bound to `0`, `1`, … `$count - 1` in turn, as [`unroll!`](crate::unroll)
/// has it, but called as a closure (always inlined) once a step: checked once by the compiler
/// however many steps. The body is a closure's: it moves nothing it captures, and a `return`
/// in it would end its step only (none of the stores has one).
macro_rules! unrolled {
    ($count:expr, |$i:ident| $body:block) => {{
        const { ::core::assert!($count <= 16, "`unrolled!` calls at most 16 steps") };
        $crate::kernel::steps::each(
            $count,
            #[inline(always)]
            |$i: usize| $body,
        )
    }};
}
pub(crate) use unrolled;
