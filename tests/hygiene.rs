//! The macros' output names everything by absolute path: it compiles without the prelude and
//! next to items that shadow the names it uses.
#![no_implicit_prelude]
#![allow(dead_code, non_camel_case_types)]

// Shadow what careless generated code would pick up.
struct core;
struct u16;
struct usize;
struct bool;
trait DlElement {}
type Result = ();
struct Option;
struct Some;
struct None;

#[derive(::core::clone::Clone, ::core::marker::Copy, ::dlmd::DlElement)]
#[repr(C)]
struct Float2 {
    x: f32,
    y: f32,
}

#[derive(::core::clone::Clone, ::core::marker::Copy, ::dlmd::DlElement)]
#[repr(transparent)]
struct Seconds(f64);

#[derive(::core::clone::Clone, ::core::marker::Copy, ::dlmd::DlElement)]
#[repr(transparent)]
struct Wrap<T>(T);

#[test]
fn derives_without_the_prelude() {
    ::std::assert_eq!(
        ::std::string::ToString::to_string(&<Float2 as ::dlmd::DlElement>::DTYPE),
        "float32x2"
    );
    ::std::assert_eq!(
        ::std::string::ToString::to_string(&<Seconds as ::dlmd::DlElement>::DTYPE),
        "float64"
    );
    ::std::assert_eq!(
        ::std::string::ToString::to_string(&<Wrap<i32> as ::dlmd::DlElement>::DTYPE),
        "int32"
    );
}

#[test]
fn views_without_the_prelude() {
    let data = [1i32, 2, 3, 4, 5, 6];
    let fixed = ::dlmd::dlmd!(&data, [2, 3]);
    ::std::assert_eq!(fixed[[1, 2]], 6);
    let rows = 3;
    let inferred = ::dlmd::dlmd!(&data, [rows, _], layout_left);
    ::std::assert_eq!(inferred[[2, 1]], 6);
    let strided = ::dlmd::dlmd!(&data, [rows - 1, 2], layout_stride, strides = [3, 1]);
    ::std::assert_eq!(strided[[1, 1]], 5);
    let x = 7u8;
    ::std::assert_eq!(::dlmd::dlmd!(&x, [])[[]], 7);
}

/// `unroll!` runs its steps in order, once each, whether its count is a literal (its steps
/// written out exactly) or a constant expression (16 written out, those past it dropped).
#[test]
fn unroll_without_the_prelude() {
    fn steps<const N: ::core::primitive::usize>() -> ::std::vec::Vec<::core::primitive::usize> {
        let mut seen = ::std::vec::Vec::new();
        ::dlmd::unroll!(N, |i| {
            seen.push(i);
        });
        seen
    }
    // Each literal count of 1 to 16 (as `tt`s, which the macro's literal arms see as written;
    // 16 takes the arm of every other count).
    macro_rules! each_literal {
        ($($n:tt)*) => {$({
            let mut seen = ::std::vec::Vec::new();
            ::dlmd::unroll!($n, |i| {
                seen.push(i);
            });
            ::std::assert_eq!(seen, ::std::iter::Iterator::collect::<::std::vec::Vec<_>>(0..$n));
            ::std::assert_eq!(seen, steps::<$n>());
        })*};
    }
    each_literal!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    ::std::assert!(steps::<0>().is_empty());
}
