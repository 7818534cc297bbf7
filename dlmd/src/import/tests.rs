//! The one-pass import path against the checked one.

use super::*;
use crate::LayoutStrideRelaxed;
use crate::dlpack::DLDevice;
use crate::extents::Dims;
use crate::layout::{LayoutLeft, LayoutRight, LayoutStride};
use crate::space::Host;
use crate::view::{AliasedMut, Shared, Unique};

/// Values at the edges of what the one-pass reading accepts: zero, one, small, negative,
/// and the bounds of its unchecked arithmetic.
const VALUES: [i64; 10] = [0, 1, 2, 3, -1, -3, 1 << 20, (1 << 31) - 1, 1 << 31, i64::MAX];

/// Every view the one-pass path builds is the one the checked path builds, for rank-2
/// tensors over every pair of extents and strides from `VALUES`, with aligned, misaligned,
/// NULL and overflowing data.
fn agree<L: Layout, A: Access>() {
    // Miri runs the same comparisons over fewer values: each kind of extent, stride, data and
    // offset once (the fuzz target `import_dltensor` covers the rest natively).
    let (extents, strides, datas, offsets): (&[i64], &[i64], &[usize], &[u64]) = if cfg!(miri) {
        (
            &[0, 1, 2, i64::MAX],
            &[0, 1, 2, -1],
            &[0x1000, 0x1002, usize::MAX - 7],
            &[0, 4],
        )
    } else {
        (
            &VALUES[..8],
            &VALUES[..],
            &[0x1000, 0x1002, 0, usize::MAX - 7],
            &[0, 4, 6],
        )
    };
    let (mut common, mut checked) = (0, 0);
    for &n0 in extents {
        for &n1 in extents {
            for &s0 in strides {
                for &s1 in strides {
                    for &data in datas {
                        for &byte_offset in offsets {
                            let mut shape = [n0, n1];
                            let mut strides = [s0, s1];
                            let t = DLTensor {
                                data: core::ptr::without_provenance_mut(data),
                                device: DLDevice::CPU,
                                ndim: 2,
                                dtype: f32::DTYPE,
                                shape: shape.as_mut_ptr(),
                                strides: strides.as_mut_ptr(),
                                byte_offset,
                            };
                            // SAFETY: the arrays are alive; no view is dereferenced (only
                            // their pointers and mappings are compared).
                            let fast = unsafe { Mdspan::<f32, Dims<2>, L, Host, A>::import_common(&t) };
                            // SAFETY: as above.
                            let slow = unsafe { Mdspan::<f32, Dims<2>, L, Host, A>::import_checked(&t, None) };
                            checked += 1;
                            if let Some(fast) = fast {
                                common += 1;
                                let slow = slow.expect("the checked path refuses what the one-pass path took");
                                assert_eq!(fast.data_handle(), slow.data_handle());
                                assert_eq!(fast.mapping(), slow.mapping());
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        common > 0 && common < checked,
        "{common} of {checked} took the one-pass path"
    );
}

#[test]
fn one_pass_and_checked_imports_agree() {
    agree::<LayoutRight, Shared>();
    agree::<LayoutLeft, Shared>();
    agree::<LayoutStride, Shared>();
    agree::<LayoutStride, Unique>();
    agree::<LayoutStrideRelaxed, Shared>();
    agree::<LayoutStrideRelaxed, AliasedMut>();
}
