//! `#[derive(DlElement)]` on the shapes it accepts.

use dlmd::Dims;
use dlmd::dlpack::{DLDataType, DLDataTypeCode as C};
use dlmd::{DlElement, ElementStorage, F4E2M1FN};
use half::f16;
use std::mem::size_of;

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Meters(f64);

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Float4 {
    x: f32,
    y: f32,
    z: f32,
    w: f32,
}

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Half2([f16; 2]);

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Packed4(Half2);

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Wrap<T>(T);

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Lanes<const N: usize>([u8; N]);

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Rgb(u8, u8, u8);

/// CUDA's `float4` is 16-byte aligned; extra alignment without padding is fine.
#[derive(Clone, Copy, DlElement)]
#[repr(C, align(16))]
struct AlignedFloat4 {
    x: f32,
    y: f32,
    z: f32,
    w: f32,
}

/// `packed(4)` keeps the alignment of `f32`.
#[derive(Clone, Copy, DlElement)]
#[repr(C, packed(4))]
struct Float2Packed {
    x: f32,
    y: f32,
}

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Fp4Pair {
    lo: F4E2M1FN,
    hi: F4E2M1FN,
}

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Flags {
    a: bool,
    b: bool,
}

/// A type alias names the same type, so the fields agree.
type Real = f32;
#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Aliased {
    re: f32,
    im: Real,
}

fn dt(code: C, bits: u8, lanes: u16) -> DLDataType {
    DLDataType::new(code, bits, lanes)
}

#[test]
fn newtypes_take_their_fields_type() {
    assert_eq!(Meters::DTYPE, dt(C::FLOAT, 64, 1));
    assert_eq!(Half2::DTYPE, dt(C::FLOAT, 16, 2));
    assert_eq!(Packed4::DTYPE, dt(C::FLOAT, 16, 2));
    assert_eq!(<Wrap<i16>>::DTYPE, dt(C::INT, 16, 1));
    assert_eq!(<Wrap<[f64; 3]>>::DTYPE, dt(C::FLOAT, 64, 3));
    assert_eq!(<Lanes<8>>::DTYPE, dt(C::UINT, 8, 8));
    assert_eq!(<Wrap<Meters>>::DTYPE, dt(C::FLOAT, 64, 1));
}

#[test]
fn vector_structs_have_one_lane_per_field() {
    assert_eq!(Float4::DTYPE, dt(C::FLOAT, 32, 4));
    assert_eq!(Float4::LANES, 4);
    assert_eq!(Rgb::DTYPE, dt(C::UINT, 8, 3));
    assert_eq!(AlignedFloat4::DTYPE, dt(C::FLOAT, 32, 4));
    assert_eq!(Float2Packed::DTYPE, dt(C::FLOAT, 32, 2));
    assert_eq!(Fp4Pair::DTYPE, dt(C::FLOAT4_E2M1FN, 4, 2));
    assert_eq!(Flags::DTYPE, dt(C::BOOL, 8, 2));
    assert_eq!(Aliased::DTYPE, dt(C::FLOAT, 32, 2));
}

#[test]
fn derived_types_keep_the_layout_contract() {
    fn check<T: DlElement>() {
        assert_eq!(size_of::<T>(), usize::from(T::LANES) * size_of::<T::Scalar>());
        assert!(std::mem::align_of::<T>() >= std::mem::align_of::<T::Scalar>());
    }
    check::<Meters>();
    check::<Float4>();
    check::<Half2>();
    check::<Wrap<u32>>();
    check::<Rgb>();
    check::<AlignedFloat4>();
    check::<Float2Packed>();
}

fn padded<T: DlElement>() -> bool {
    T::Storage::IS_SUBBYTE_PADDED
}

#[test]
fn storage_follows_the_scalar() {
    assert!(padded::<Fp4Pair>());
    assert!(!padded::<Float4>());
    assert!(padded::<Wrap<F4E2M1FN>>());
}

#[test]
fn derived_values_are_used_as_plain_data() {
    let v = [Float4 {
        x: 1.0,
        y: 2.0,
        z: 3.0,
        w: 4.0,
    }; 2];
    assert_eq!(v[1].x + v[1].y + v[1].z + v[1].w, 10.0);
    let m = Meters(2.5);
    assert_eq!(m.0, 2.5);
    let w = Wrap(7u8);
    let l = Lanes([1u8; 8]);
    assert_eq!(w.0 + l.0[7], 8);
    let (r, a, p, f, b, q) = (
        Rgb(1, 2, 3),
        Aliased { re: 1.0, im: 2.0 },
        Packed4(Half2([f16::ONE; 2])),
        Float2Packed { x: 1.0, y: 2.0 },
        Flags { a: true, b: false },
        Fp4Pair {
            lo: F4E2M1FN::from_f32(1.0),
            hi: F4E2M1FN::from_f32(6.0),
        },
    );
    assert_eq!(r.0 + r.1 + r.2, 6);
    assert_eq!(a.re + a.im, 3.0);
    assert_eq!(p.0.0[1], f16::ONE);
    let (fx, fy) = (f.x, f.y);
    assert_eq!(fx + fy, 3.0);
    assert!(b.a && !b.b);
    assert_eq!(q.lo.to_f32() + q.hi.to_f32(), 7.0);
    let aligned = AlignedFloat4 {
        x: 0.0,
        y: 1.0,
        z: 2.0,
        w: 3.0,
    };
    assert_eq!(aligned.w - aligned.z + aligned.y - aligned.x, 2.0);
}

/// A unit of measure that is not `Copy`: only the marker names it.
struct Kelvin;

/// A newtype with a zero-sized marker: `PhantomData` takes no lane. `Copy` is implemented by
/// hand so that it holds whatever the unit is.
#[derive(DlElement)]
#[repr(transparent)]
struct Quantity<U: 'static>(f32, std::marker::PhantomData<fn() -> U>);

impl<U> Clone for Quantity<U> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<U> Copy for Quantity<U> {}

/// A generic newtype over a generic foreign type: an element where its parameter makes one.
#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct MyComplex<T>(num_complex::Complex<T>);

/// A vector struct of derived newtypes, and a marker beside the lanes.
#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Position {
    x: Meters,
    y: Meters,
    z: Meters,
    frame: std::marker::PhantomData<Kelvin>,
}

#[test]
fn phantom_markers_take_no_lane() {
    assert_eq!(<Quantity<Kelvin>>::DTYPE, dt(C::FLOAT, 32, 1));
    assert_eq!(size_of::<Quantity<Kelvin>>(), 4);
    assert_eq!(Position::DTYPE, dt(C::FLOAT, 64, 3));
    let q = Quantity::<Kelvin>(273.15, std::marker::PhantomData);
    let p = Position {
        x: Meters(1.0),
        y: Meters(2.0),
        z: Meters(3.0),
        frame: std::marker::PhantomData,
    };
    assert_eq!(q.0 + (p.x.0 + p.y.0 + p.z.0) as f32, 279.15);
}

#[test]
fn generic_newtypes_of_generic_types() {
    assert_eq!(<MyComplex<f32>>::DTYPE, dt(C::COMPLEX, 64, 1));
    assert_eq!(<MyComplex<half::bf16>>::DTYPE, dt(C::BCOMPLEX, 32, 1));
    assert_eq!(MyComplex(num_complex::Complex::new(1.0f64, 2.0)).0.im, 2.0);
}

#[test]
fn derived_newtypes_are_vector_lanes() {
    fn lane<T: dlmd::DlLane>() {}
    lane::<Meters>();
    lane::<Quantity<Kelvin>>();
    lane::<Wrap<Meters>>();
    assert_eq!(<[Meters; 4]>::DTYPE, dt(C::FLOAT, 64, 4));
    assert_eq!(<[Quantity<Kelvin>; 2]>::DTYPE, dt(C::FLOAT, 32, 2));
    assert_eq!(<[MyComplex<f64>; 3]>::DTYPE, dt(C::COMPLEX, 128, 3));
    // Their scalar is the one under the newtypes.
    let scalar: <[Meters; 4] as DlElement>::Scalar = 1.5f64;
    assert_eq!(scalar, 1.5);
    fn check<T: DlElement>() {
        assert_eq!(size_of::<T>(), usize::from(T::LANES) * size_of::<T::Scalar>());
    }
    check::<[Meters; 4]>();
    check::<Position>();
    // A round trip through DLPack as a vector of newtypes.
    let data = [[Meters(1.0), Meters(2.0)], [Meters(3.0), Meters(4.0)]];
    let md = dlmd::HostMdspan::<[Meters; 2], dlmd::Dims<1>>::from_slice(&data, dlmd::Dims::new([2])).unwrap();
    let dl = dlmd::to_dlpack_tensor(&md);
    let t = dl.get();
    assert_eq!(t.dtype, dt(C::FLOAT, 64, 2));
    // SAFETY: the tensor describes `data`, alive and unchanged here.
    let back = unsafe { dlmd::HostMdspan::<[Meters; 2], Dims<1>, dlmd::LayoutRight>::from_dlpack(&t) }.unwrap();
    assert_eq!(back[[1]][1].0, 4.0);
}

/// With the `cuda` feature the derive makes element types kernel-ready, with no `unsafe` of the
/// user's: cudarc's `DeviceRepr` for every derived type, and `ValidAsZeroBits` where every lane
/// is (so `alloc_zeros` and `Gpu::zeros` take them).
#[test]
fn derived_elements_are_device_repr_and_zeroable_where_their_lanes_are() {
    use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
    fn zeroable<T: DeviceRepr + ValidAsZeroBits>() {}
    fn device_repr<T: DeviceRepr>() {}
    zeroable::<Float4>();
    zeroable::<Meters>();
    zeroable::<Rgb>();
    zeroable::<Wrap<f32>>();
    zeroable::<Lanes<3>>();
    zeroable::<Half2>();
    zeroable::<Packed4>();
    zeroable::<AlignedFloat4>();
    // FP4 lanes are not cudarc element types: the pair still crosses to kernels by value.
    device_repr::<Fp4Pair>();
    assert_eq!(size_of::<Float4>(), 16);
}
