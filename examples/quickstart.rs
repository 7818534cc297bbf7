//! A tour of dlmd: the DLPack data type of every built-in element type and of a derived vector,
//! then a 2×3 view exported as a `DLTensor`, imported back and indexed.
//!
//! Run with `cargo run --example quickstart`.

use dlmd::half::{bf16, f16};
use dlmd::num_complex::Complex;
use dlmd::{Dims, HostMdspan};
use dlmd::{DlElement, F4E2M1FN, F6E2M3FN, F6E3M2FN, F8E4M3FN, F8E5M2, F8E8M0FNU, LayoutRight, dlmd, to_dlpack_tensor};
use std::error::Error;
use std::process::ExitCode;

/// CUDA's `float4`, as a Rust type DLPack can describe: `{FLOAT, 32, 4}`.
#[derive(Clone, Copy, Debug, DlElement)]
#[repr(C, align(16))]
struct Float4 {
    x: f32,
    y: f32,
    z: f32,
    w: f32,
}

/// A unit newtype: same data type as its `f64`.
#[derive(Clone, Copy, Debug, DlElement)]
#[repr(transparent)]
struct Meters(f64);

fn row<T: DlElement>(name: &str) {
    let dtype = T::DTYPE;
    println!(
        "{name:<16} {:<18} code {:>2}  bits {:>3}  lanes {:>2}  {} byte(s)",
        dtype.to_string(),
        dtype.code,
        dtype.bits,
        dtype.lanes,
        size_of::<T>()
    );
}

fn main() -> ExitCode {
    dtypes();
    match round_trip() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quickstart: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The seed example: a 2×3 `i32` view built with `dlmd!`, exported, printed, imported, indexed.
fn round_trip() -> Result<(), Box<dyn Error>> {
    let data = [0, 1, 2, 3, 4, 5];
    let md = dlmd!(&data, [2, 3]);

    let dl = to_dlpack_tensor(&md);
    let t = dl.get();
    println!();
    println!("DLTensor of a 2x3 i32 view:");
    println!("  data        {:p}", t.data);
    println!("  device      {:?} {}", t.device.device_type, t.device.device_id);
    println!("  ndim        {}", t.ndim);
    println!("  dtype       {} {:?}", t.dtype, t.dtype);
    println!("  shape       {:?}", t.shape());
    println!("  strides     {:?}", t.strides().unwrap_or_default());
    println!("  byte_offset {}", t.byte_offset);

    // SAFETY: `t` describes `data`, which outlives `back` and is not written meanwhile.
    let back = unsafe { HostMdspan::<i32, Dims<2>, LayoutRight>::from_dlpack(&t) }?;
    println!(
        "imported back: extents {:?}, back[[1, 2]] = {}",
        back.extents().0,
        back[[1, 2]]
    );
    for i in 0..back.extent(0) {
        let row: Vec<i32> = (0..back.extent(1)).map(|j| back[[i, j]]).collect();
        println!("  row {i}: {row:?}");
    }
    let column = back.submdspan((.., 1))?;
    println!("column 1 (a strided subview): {:?}", column.iter().collect::<Vec<_>>());
    Ok(())
}

fn dtypes() {
    println!("element type     DLPack dtype");
    row::<bool>("bool");
    row::<i8>("i8");
    row::<i16>("i16");
    row::<i32>("i32");
    row::<i64>("i64");
    row::<u8>("u8");
    row::<u16>("u16");
    row::<u32>("u32");
    row::<u64>("u64");
    row::<f16>("f16");
    row::<bf16>("bf16");
    row::<f32>("f32");
    row::<f64>("f64");
    row::<Complex<f16>>("Complex<f16>");
    row::<Complex<f32>>("Complex<f32>");
    row::<Complex<f64>>("Complex<f64>");
    row::<F8E4M3FN>("F8E4M3FN");
    row::<F8E5M2>("F8E5M2");
    row::<F8E8M0FNU>("F8E8M0FNU");
    row::<F6E2M3FN>("F6E2M3FN");
    row::<F6E3M2FN>("F6E3M2FN");
    row::<F4E2M1FN>("F4E2M1FN");
    row::<[f32; 4]>("[f32; 4]");
    row::<Float4>("Float4 (derived)");
    row::<Meters>("Meters (derived)");

    let x = 0.3f32;
    println!();
    println!(
        "{x} rounds to {} as F8E4M3FN, {} as F8E5M2, {} as F4E2M1FN",
        F8E4M3FN::from_f32(x),
        F8E5M2::from_f32(x),
        F4E2M1FN::from_f32(x)
    );
    let v = Float4 {
        x: 1.0,
        y: 2.0,
        z: 3.0,
        w: 4.0,
    };
    println!(
        "{v:?} and {:?} are plain data, ready to cross to C, CUDA or Python",
        Meters(1.5)
    );
}
