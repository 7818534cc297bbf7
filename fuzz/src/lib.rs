//! Structure-aware inputs and oracles shared by the fuzz targets.
//!
//! An input holds one case or several ([`cases`]): each case is decoded as `fuzz_target!`
//! decodes a whole input, and the targets run every case ([`fuzz_cases!`]), so that a few seed
//! files hold a corpus whose coverage spans thousands of monomorphised paths.
//!
//! Every target builds its tensors over a buffer it allocated itself, then checks each answer
//! against arithmetic of its own (in `i128`, so nothing here overflows): an accepted view reaches
//! exactly the bytes the tensor describes, all inside that buffer; a refused one names a reason.

use arbitrary::Arbitrary;
use dlmd::dlpack::{DLDataType, DLDevice, DLDeviceType, DLPackVersion, DLTensor};
use dlmd::extents::IndexArray;
use dlmd::{DlElement, Extents, Mapping, Mdspan, view::Access};

/// The cases of one input: `[length: u16, little-endian][length bytes]`, repeated; a length past
/// the end takes what is left, and an input too short for a length is one case.
pub fn cases(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = data;
    let mut first = true;
    core::iter::from_fn(move || {
        if rest.len() < 2 {
            let last = (first && !rest.is_empty()).then_some(rest);
            first = false;
            rest = &[];
            return last;
        }
        first = false;
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        let body = &rest[2..];
        let (case, next) = body.split_at(len.min(body.len()));
        rest = next;
        Some(case)
    })
}

/// One case decoded as `fuzz_target!` decodes an input: `None` where it is shorter than the
/// type's size hint or does not decode.
pub fn decode<'a, T: Arbitrary<'a>>(case: &'a [u8]) -> Option<T> {
    if case.len() < T::size_hint(0).0 {
        return None;
    }
    T::arbitrary_take_rest(arbitrary::Unstructured::new(case)).ok()
}

/// `libfuzzer_sys::fuzz_target!` over every case of an input ([`cases`]): the body runs once per
/// case that decodes, as a closure (`return` ends the case).
#[macro_export]
macro_rules! fuzz_cases {
    (|$input:ident: $ty:ty| $body:block) => {
        libfuzzer_sys::fuzz_target!(|data: &[u8]| {
            let run = |$input: $ty| $body;
            for case in $crate::cases(data) {
                if let Some(input) = $crate::decode::<$ty>(case) {
                    run(input);
                }
            }
        });
    };
}

/// The largest buffer a target allocates.
pub const MAX_BUFFER: usize = 4096;
/// How many indices of an accepted view are walked (the first ones in row-major order, then the
/// last one): enough to meet every stride, bounded for huge broadcast views.
pub const MAX_WALK: usize = 512;

/// An extent: mostly small, sometimes anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Extent {
    Small(u8),
    Any(i64),
}

impl Extent {
    pub fn get(self) -> i64 {
        match self {
            Extent::Small(n) => i64::from(n % 8),
            Extent::Any(n) => n,
        }
    }
}

/// A stride in elements: mostly small (negative and zero too), sometimes anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Stride {
    Small(i8),
    Any(i64),
}

impl Stride {
    pub fn get(self) -> i64 {
        match self {
            Stride::Small(s) => i64::from(s % 24),
            Stride::Any(s) => s,
        }
    }
}

/// Where `data` points.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Data {
    /// NULL.
    Null,
    /// This many bytes into the buffer (modulo its length + 1).
    Into(u16),
}

/// `byte_offset`.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum ByteOffset {
    Small(u8),
    Any(u64),
}

/// The device field, relative to the memory space the view asks for.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum DeviceChoice {
    /// The device type the space takes, ordinal 0.
    Matching,
    /// The device type the space takes, with this ordinal.
    Ordinal(i32),
    /// Any device type and ordinal.
    Any(i32, i32),
}

/// A `DLTensor`'s fields, as a fuzzer picks them.
#[derive(Arbitrary, Debug, Clone)]
pub struct TensorFields {
    /// `None`: `ndim` equals the view's rank.
    pub ndim: Option<i32>,
    pub shape: [Extent; 8],
    pub null_shape: bool,
    /// `None`: NULL strides.
    pub strides: Option<[Stride; 8]>,
    pub data: Data,
    pub byte_offset: ByteOffset,
    pub device: DeviceChoice,
    /// `Some`: this data type instead of the element type's.
    pub dtype: Option<(u8, u8, u16)>,
    pub buffer_len: u16,
    /// Bytes repeated over the buffer (mostly 0 and 1, so that `bool` tensors pass sometimes).
    pub fill: Vec<u8>,
}

/// A buffer and the arrays a `DLTensor` points into, alive while the tensor is used.
pub struct Built {
    pub buffer: Vec<u64>,
    pub len: usize,
    pub shape: [i64; 8],
    pub strides: [i64; 8],
    pub tensor: DLTensor,
}

impl Built {
    /// The buffer's first byte.
    pub fn start(&self) -> usize {
        self.buffer.as_ptr() as usize
    }
    /// The bytes of the buffer.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `buffer` holds at least `len` initialised bytes (a `u64` is 8 of them).
        unsafe { core::slice::from_raw_parts(self.buffer.as_ptr().cast::<u8>(), self.len) }
    }
}

impl TensorFields {
    /// Builds the tensor for a view of rank `rank` and element type `T` on `device_type`.
    /// `Box`ed so that the tensor's pointers into it stay put.
    pub fn build<T: DlElement>(&self, rank: usize, device_type: DLDeviceType) -> Box<Built> {
        let len = usize::from(self.buffer_len) % (MAX_BUFFER + 1);
        let mut buffer = vec![0u64; len.div_ceil(8) + 1];
        {
            // SAFETY: the `u64` buffer holds `8 * buffer.len() >= len` bytes.
            let bytes = unsafe { core::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast::<u8>(), len) };
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = match self.fill.get(i % self.fill.len().max(1)) {
                    Some(&v) if v >= 0xf0 => v,
                    Some(&v) => v & 1,
                    None => (i & 1) as u8,
                };
            }
        }
        let mut built = Box::new(Built {
            buffer,
            len,
            shape: self.shape.map(Extent::get),
            strides: self.strides.map_or([0; 8], |s| s.map(Stride::get)),
            tensor: DLTensor {
                data: core::ptr::null_mut(),
                device: DLDevice::CPU,
                ndim: self.ndim.unwrap_or(rank as i32),
                dtype: self.dtype.map_or(T::DTYPE, |(c, b, l)| DLDataType {
                    code: c,
                    bits: b,
                    lanes: l,
                }),
                shape: core::ptr::null_mut(),
                strides: core::ptr::null_mut(),
                byte_offset: match self.byte_offset {
                    ByteOffset::Small(b) => u64::from(b),
                    ByteOffset::Any(b) => b,
                },
            },
        });
        let base = built.buffer.as_mut_ptr().cast::<u8>();
        built.tensor.data = match self.data {
            Data::Null => core::ptr::null_mut(),
            Data::Into(at) => base.wrapping_add(usize::from(at) % (len + 1)).cast(),
        };
        built.tensor.device = match self.device {
            DeviceChoice::Matching => DLDevice {
                device_type,
                device_id: 0,
            },
            DeviceChoice::Ordinal(id) => DLDevice {
                device_type,
                device_id: id,
            },
            DeviceChoice::Any(t, id) => DLDevice {
                device_type: DLDeviceType(t),
                device_id: id,
            },
        };
        if !self.null_shape {
            built.tensor.shape = built.shape.as_mut_ptr();
        }
        if self.strides.is_some() {
            built.tensor.strides = built.strides.as_mut_ptr();
        }
        built
    }
}

/// What a tensor describes, computed here independently of dlmd (in `i128`).
#[derive(Debug)]
pub struct Described {
    pub extents: Vec<i64>,
    /// Strides in elements (row-major where NULL).
    pub strides: Vec<i64>,
    /// Address of element `[0, …]`.
    pub element0: i128,
    /// Lowest and one-past-highest byte any element occupies (equal when empty).
    pub low: i128,
    pub high: i128,
    pub empty: bool,
}

impl Described {
    /// The address of `index`.
    pub fn address(&self, index: &[usize], size: usize) -> i128 {
        let mut a = self.element0;
        for (&i, &s) in index.iter().zip(&self.strides) {
            a = a.saturating_add((i as i128).saturating_mul(s as i128).saturating_mul(size as i128));
        }
        a
    }
}

/// Reads what `tensor` describes for a view of rank `rank` and element size `size`, or `None`
/// when the importer must refuse it without looking further (wrong `ndim`, NULL shape, negative
/// extents).
pub fn describe(built: &Built, rank: usize, size: usize) -> Option<Described> {
    let t = &built.tensor;
    if t.ndim != rank as i32 || (rank > 0 && t.shape.is_null()) {
        return None;
    }
    let extents = built.shape[..rank].to_vec();
    if extents.iter().any(|&n| n < 0) {
        return None;
    }
    let strides = if t.strides.is_null() {
        let mut s = vec![0i64; rank];
        let mut acc = 1i64;
        for d in (0..rank).rev() {
            s[d] = acc;
            acc = acc.saturating_mul(extents[d]);
        }
        s
    } else {
        built.strides[..rank].to_vec()
    };
    let empty = extents.contains(&0);
    let element0 = t.data as usize as i128 + i128::from(t.byte_offset);
    let (mut low, mut high) = (element0, element0 + size as i128);
    for (&n, &s) in extents.iter().zip(&strides) {
        if n > 0 {
            // Saturating: beyond 2^126 bytes every answer is "too far" alike.
            let reach = (n as i128 - 1).saturating_mul(s as i128).saturating_mul(size as i128);
            if reach < 0 {
                low = low.saturating_add(reach);
            } else {
                high = high.saturating_add(reach);
            }
        }
    }
    if empty {
        high = low;
    }
    Some(Described {
        extents,
        strides,
        element0,
        low,
        high,
        empty,
    })
}

/// Whether every byte `d` describes lies in the buffer: the importers' safety contract, which
/// the target must keep before dlmd may read (it reads `bool` bytes of host memory).
pub fn inside(built: &Built, d: &Described) -> bool {
    let start = built.start() as i128;
    d.empty || (d.low >= start && d.high <= start + built.len as i128)
}

/// An index of rank ≤ 8 without allocating.
#[derive(Clone, Copy, Debug)]
pub struct Ix {
    values: [usize; 8],
    rank: usize,
}

impl core::ops::Deref for Ix {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.values[..self.rank]
    }
}

/// The first `MAX_WALK` indices of `extents` (rank ≤ 8) in row-major order, then the last one.
pub fn walk(extents: &[usize]) -> Walk {
    let rank = extents.len();
    let mut e = [0usize; 8];
    e[..rank].copy_from_slice(extents);
    let empty = extents.contains(&0);
    Walk {
        extents: e,
        rank,
        next: (!empty).then_some([0; 8]),
        count: 0,
        last: !empty,
    }
}

/// The iterator [`walk`] returns.
pub struct Walk {
    extents: [usize; 8],
    rank: usize,
    next: Option<[usize; 8]>,
    count: usize,
    last: bool,
}

impl Iterator for Walk {
    type Item = Ix;
    fn next(&mut self) -> Option<Ix> {
        let rank = self.rank;
        match self.next {
            Some(index) if self.count < MAX_WALK => {
                self.count += 1;
                let mut next = index;
                self.next = None;
                for d in (0..rank).rev() {
                    next[d] += 1;
                    if next[d] < self.extents[d] {
                        self.next = Some(next);
                        break;
                    }
                    next[d] = 0;
                }
                if self.next.is_none() {
                    self.last = false;
                }
                Some(Ix { values: index, rank })
            }
            _ if self.last => {
                self.last = false;
                let mut values = [0; 8];
                for d in 0..rank {
                    values[d] = self.extents[d] - 1;
                }
                Some(Ix { values, rank })
            }
            _ => None,
        }
    }
}

/// Checks an accepted view against what the tensor describes: the same extents, every walked
/// index at the described address, inside the buffer when the tensor was, and no two walked
/// indices of a mutable view at one address.
pub fn check_view<T, E, L, S, A>(view: &Mdspan<'_, T, E, L, S, A>, built: &Built, d: &Described)
where
    T: DlElement,
    E: Extents,
    L: dlmd::layout::Layout,
    S: dlmd::space::MemorySpace,
    A: Access,
{
    let size = size_of::<T>();
    let extents = view.extents().to_array();
    let extents = extents.as_ref();
    assert_eq!(
        extents.iter().map(|&n| n as i64).collect::<Vec<_>>(),
        d.extents,
        "extents differ from the tensor's"
    );
    assert!(
        d.empty || d.low > 0,
        "accepted a tensor whose elements reach address {:#x}",
        d.low
    );
    assert!(
        d.empty || d.high <= usize::MAX as i128,
        "accepted a tensor past the address space"
    );
    let mut seen = Vec::new();
    for index in walk(extents) {
        let i = index_of::<E>(&index);
        let got = view.as_ptr() as usize as i128 + (view.mapping().offset_of(&i) * size) as i128;
        assert_eq!(got, d.address(&index, size), "index {index:?} maps elsewhere");
        if inside(built, d) {
            let start = built.start() as i128;
            assert!(got >= start && got + size as i128 <= start + built.len as i128);
        }
        if A::MUTABLE {
            seen.push(got);
        }
    }
    // The walked indices are distinct, so a repeated address is two indices on one element.
    seen.sort_unstable();
    assert!(
        seen.windows(2).all(|w| w[0] != w[1]),
        "a mutable view reaches one address from two indices"
    );
}

/// `index` as the index type of extents `E` (whose rank it has).
pub fn index_of<E: Extents>(index: &[usize]) -> E::Index {
    let mut i = <E::Index as IndexArray>::zeros();
    i.as_mut().copy_from_slice(index);
    i
}

/// The DLPack version the fuzzer gives a tensor.
pub fn version(v: Option<(u8, u8)>) -> Option<DLPackVersion> {
    v.map(|(major, minor)| DLPackVersion {
        major: u32::from(major % 3),
        minor: u32::from(minor % 5),
    })
}
