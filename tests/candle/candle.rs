//! candle 0.11 CPU tensors ⇄ dlmd: views, exports and imports of every mapped dtype and of
//! strided layouts, checked against candle's own indexing.

use candle_core::op::BackpropOp;
use candle_core::{CpuStorage, DType, Device, IndexOp, Storage, Tensor};
use dlmd::HostMdspanAliased;
use dlmd::candle::{self, CandleError};
use dlmd::dlpack::{DLManagedTensorVersioned, READ_ONLY};
use dlmd::managed::{ManagedTensor, export};
use dlmd::{Dims, Extents, F4E2M1FNx2, F8E4M3FN, F8E8M0FNU, LayoutRight, LayoutStride, LayoutStrideRelaxed};
use half::{bf16, f16};
use proptest::prelude::*;

type Result<T = ()> = core::result::Result<T, Box<dyn std::error::Error>>;

fn own(raw: *mut DLManagedTensorVersioned) -> ManagedTensor {
    // SAFETY: every pointer passed here was just made by dlmd's exports and is handed over.
    unsafe { ManagedTensor::from_raw(raw) }.unwrap()
}

fn raw_tensor(storage: CpuStorage, shape: &[usize]) -> Tensor {
    Tensor::from_storage(Storage::Cpu(storage), shape.to_vec(), BackpropOp::none(), false)
}

/// Exports `t`, checks what the consumer sees, and imports it back: the same candle tensor.
fn round_trip(t: &Tensor) -> Result<ManagedTensor> {
    let managed = own(candle::export(t)?);
    assert_eq!(managed.flags() & READ_ONLY, READ_ONLY);
    let dl = managed.dl_tensor();
    assert_eq!(dl.dtype, candle::dl_dtype(t.dtype())?);
    assert_eq!(dl.ndim as usize, t.rank());
    let back = candle::import(managed, &Device::Cpu)?;
    assert_eq!(back.id(), t.id(), "the exported tensor comes back itself");
    Ok(own(candle::export(t)?))
}

/// The values of a host view of `t` as `T`, in row-major order.
fn values<T: candle::CandleElement, const R: usize>(t: &Tensor) -> Result<Vec<T>> {
    let b = candle::borrow(t);
    Ok(b.host_view::<T, Dims<R>, LayoutStrideRelaxed>()?
        .iter()
        .copied()
        .collect())
}

macro_rules! every_plain_dtype {
    ($($t:ty => $dtype:ident, $make:expr;)*) => {$({
        let data: Vec<$t> = (0..12).map($make).collect();
        let t = Tensor::from_vec(data.clone(), (3, 4), &Device::Cpu)?;
        assert_eq!(t.dtype(), DType::$dtype);
        assert_eq!(values::<$t, 2>(&t)?, data);
        let tt = t.t()?;
        let expected: Vec<$t> = tt.flatten_all()?.to_vec1()?;
        assert_eq!(values::<$t, 2>(&tt)?, expected, "{:?} transposed", DType::$dtype);
        // Through DLPack and back.
        let managed = round_trip(&tt)?;
        let seen: Vec<$t> = managed.view::<HostMdspanAliased<'_, $t, Dims<2>, LayoutStride>>()?.values().collect();
        assert_eq!(seen, expected);
        // A tensor of another producer becomes a copy in candle's storage.
        let foreign = own(export::<DLManagedTensorVersioned>(data.clone(), Dims::new([3, 4]))?);
        let copy = candle::import(foreign, &Device::Cpu)?;
        assert_eq!(copy.dtype(), DType::$dtype);
        assert_eq!(copy.dims(), [3, 4]);
        assert_eq!(copy.flatten_all()?.to_vec1::<$t>()?, data);
    })*};
}

#[test]
fn every_plain_dtype_maps_both_ways() -> Result {
    #![allow(clippy::unnecessary_cast)]
    every_plain_dtype! {
        u8 => U8, |i| i as u8;
        u32 => U32, |i| i as u32 * 7;
        i16 => I16, |i| i as i16 - 6;
        i32 => I32, |i| i as i32 * -3;
        i64 => I64, |i| i as i64 * 1_000_000_007;
        bf16 => BF16, |i| bf16::from_f32(i as f32 * 0.5);
        f16 => F16, |i| f16::from_f32(i as f32 * 0.25);
        f32 => F32, |i| i as f32 * 1.5;
        f64 => F64, |i| i as f64 / 3.0;
    }
    Ok(())
}

#[test]
fn fp8_and_fp4_map_bit_for_bit() -> Result {
    // E4M3: candle converts from f32 itself; dlmd reads the same bits.
    let f = Tensor::new(&[[0.5f32, -1.0, 448.0], [2.0, 0.0, -0.125]], &Device::Cpu)?;
    let e4m3 = f.to_dtype(DType::F8E4M3)?;
    let seen = values::<F8E4M3FN, 2>(&e4m3)?;
    let expected: Vec<f32> = f.flatten_all()?.to_vec1()?;
    assert_eq!(seen.iter().map(|x| x.to_f32()).collect::<Vec<_>>(), expected);
    round_trip(&e4m3)?;
    let foreign = own(export::<DLManagedTensorVersioned>(seen.clone(), Dims::new([2, 3]))?);
    let copy = candle::import(foreign, &Device::Cpu)?;
    assert_eq!(copy.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?, expected);

    // E8M0 scales: one byte each.
    let codes = vec![127u8, 128, 126, 0xff];
    let e8m0 = raw_tensor(CpuStorage::F8E8M0(codes.clone()), &[4]);
    let seen = values::<F8E8M0FNU, 1>(&e8m0)?;
    assert_eq!(seen.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), codes);
    assert_eq!(seen[1].to_f32(), 2.0);
    round_trip(&e8m0)?;
    let copy = candle::import(
        own(export::<DLManagedTensorVersioned>(seen, Dims::new([4]))?),
        &Device::Cpu,
    )?;
    assert_eq!(copy.dtype(), DType::F8E8M0);

    // FP4: candle's shape counts values, two a byte; dlmd's pairs count bytes.
    let bytes = vec![0x21u8, 0x43, 0x65, 0x87, 0xa9, 0xcb];
    let f4 = raw_tensor(CpuStorage::F4(bytes.clone()), &[2, 6]);
    let b = candle::borrow(&f4);
    let pairs = b.host_view::<F4E2M1FNx2, Dims<2>, LayoutRight>()?;
    assert_eq!(pairs.extents().to_array(), [2, 3]);
    assert_eq!(pairs[[1, 0]].to_bits(), 0x87);
    drop(b);
    let managed = round_trip(&f4)?;
    let dl = managed.dl_tensor();
    // SAFETY: a rank-2 tensor made by dlmd: two shape values.
    assert_eq!(unsafe { core::slice::from_raw_parts(dl.shape, 2) }, [2, 3]);
    let copy = candle::import(
        own(export::<DLManagedTensorVersioned>(
            bytes.iter().map(|&b| F4E2M1FNx2::from_bits(b)).collect::<Vec<_>>(),
            Dims::new([2, 3]),
        )?),
        &Device::Cpu,
    )?;
    assert_eq!((copy.dtype(), copy.dims()), (DType::F4, &[2usize, 6][..]));
    Ok(())
}

#[test]
fn refusals_are_named() -> Result {
    let t = Tensor::arange(0f32, 6.0, &Device::Cpu)?.reshape((2, 3))?;
    let b = candle::borrow(&t);
    assert!(matches!(
        b.host_view::<f64, Dims<2>, LayoutRight>(),
        Err(CandleError::Dtype {
            found: DType::F32,
            wanted: DType::F64
        })
    ));
    assert!(matches!(
        b.host_view::<f32, Dims<3>, LayoutRight>(),
        Err(CandleError::Rank { found: 2, wanted: 3 })
    ));
    assert!(matches!(
        b.host_view::<f32, (dlmd::Const<2>, dlmd::Const<4>), LayoutRight>(),
        Err(CandleError::View(_))
    ));
    drop(b);
    // A transpose does not fit a row-major view; a broadcast needs the relaxed layout.
    let tt = t.t()?;
    assert!(matches!(
        candle::borrow(&tt).host_view::<f32, Dims<2>, LayoutRight>(),
        Err(CandleError::View(_))
    ));
    let wide = t.i((.., 0..1))?.broadcast_as((2, 5))?;
    assert!(candle::borrow(&wide).host_view::<f32, Dims<2>, LayoutStride>().is_err());
    let v = candle::borrow(&wide)
        .host_view::<f32, Dims<2>, LayoutStrideRelaxed>()?
        .iter()
        .copied()
        .collect::<Vec<_>>();
    assert_eq!(v, [0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0, 3.0, 3.0]);
    // FP6 is packed four to three bytes: no element type.
    let f6 = raw_tensor(CpuStorage::F6E2M3(vec![0; 3]), &[4]);
    assert!(matches!(
        candle::export(&f6),
        Err(CandleError::Unsupported(DType::F6E2M3))
    ));
    assert!(matches!(
        candle::dl_dtype(DType::F6E3M2),
        Err(CandleError::Unsupported(_))
    ));
    // FP4 with an odd number of values a row cannot be paired.
    let odd = raw_tensor(CpuStorage::F4(vec![0; 3]), &[1, 5]);
    assert!(matches!(
        candle::borrow(&odd).host_view::<F4E2M1FNx2, Dims<2>, LayoutRight>(),
        Err(CandleError::PackedLayout)
    ));
    // DLPack types candle lacks.
    let bools = own(export::<DLManagedTensorVersioned>(vec![true, false], Dims::new([2]))?);
    assert!(matches!(
        candle::import(bools, &Device::Cpu),
        Err(CandleError::NoCandleDtype(_))
    ));
    let cplx = own(export::<DLManagedTensorVersioned>(
        vec![num_complex::Complex32::new(1.0, 2.0)],
        Dims::new([1]),
    )?);
    assert!(matches!(
        candle::import(cplx, &Device::Cpu),
        Err(CandleError::NoCandleDtype(_))
    ));
    // Errors read as sentences.
    assert!(CandleError::Unsupported(DType::F6E2M3).to_string().contains("F6E2M3"));
    Ok(())
}

#[test]
fn a_view_holds_candles_read_lock() -> Result {
    let t = Tensor::zeros((2, 2), DType::F32, &Device::Cpu)?;
    let src = Tensor::ones((1, 2), DType::F32, &Device::Cpu)?;
    {
        let b = candle::borrow(&t);
        let view = b.host_view::<f32, Dims<2>, LayoutRight>()?;
        assert_eq!(view[[1, 1]], 0.0);
    }
    // Once the view is gone, candle writes in place again, and a new view sees it.
    t.slice_set(&src, 0, 1)?;
    let b = candle::borrow(&t);
    assert_eq!(b.host_view::<f32, Dims<2>, LayoutRight>()?[[1, 1]], 1.0);
    Ok(())
}

#[test]
fn strided_foreign_tensors_are_copied_in_row_major_order() -> Result {
    // A column-major ndarray, exported as it lies (strides 1, 3), becomes a row-major candle copy.
    let a = ndarray::Array2::from_shape_fn((3, 4).f(), |(i, j)| (10 * i + j) as f32);
    let raw = dlmd::ndarray::export::<DLManagedTensorVersioned, f32, 2>(a.clone())?;
    let t = candle::import(own(raw), &Device::Cpu)?;
    for i in 0..3 {
        for j in 0..4 {
            assert_eq!(t.i((i, j))?.to_scalar::<f32>()?, a[[i, j]]);
        }
    }
    Ok(())
}

use ndarray::ShapeBuilder;

/// A rank-3 candle tensor, permuted and narrowed as the strategy says.
fn strided_tensor(dims: [usize; 3], perm: [usize; 3], start: [usize; 3]) -> Result<Tensor> {
    let n: usize = dims.iter().product();
    let t = Tensor::arange(0u32, n as u32, &Device::Cpu)?.reshape(dims.to_vec())?;
    let t = t.permute(perm.to_vec())?;
    let mut t = t;
    for (d, &s) in start.iter().enumerate() {
        let len = t.dim(d)?;
        let s = s % len;
        t = t.narrow(d, s, len - s)?;
    }
    Ok(t)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 64 },
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    #[test]
    fn views_agree_with_candles_indexing(
        dims in [1usize..5, 1usize..5, 1usize..5],
        perm in Just([0usize, 1, 2]).prop_shuffle(),
        start in [0usize..4, 0usize..4, 0usize..4],
    ) {
        let t = strided_tensor(dims, perm, start).unwrap();
        let b = candle::borrow(&t);
        let view = b.host_view::<u32, Dims<3>, LayoutStride>().unwrap();
        let [d0, d1, d2] = view.extents().to_array();
        prop_assert_eq!([d0, d1, d2].to_vec(), t.dims().to_vec());
        for i in 0..d0 {
            for j in 0..d1 {
                for k in 0..d2 {
                    prop_assert_eq!(view[[i, j, k]], t.i((i, j, k)).unwrap().to_scalar::<u32>().unwrap());
                }
            }
        }
        drop(b);
        // The export carries candle's strides; a consumer reads the same values.
        let managed = own(candle::export(&t).unwrap());
        let seen: Vec<u32> = managed.view::<HostMdspanAliased<'_, u32, Dims<3>, LayoutStride>>().unwrap().values().collect();
        prop_assert_eq!(seen, t.flatten_all().unwrap().to_vec1::<u32>().unwrap());
    }
}
