//! The derive's output names everything by absolute path: it compiles without the prelude and
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
