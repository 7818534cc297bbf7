use super::{LeftPadded, RightPadded, TileLayout, TileOf, TileSet};
use crate::aligned::Align128;
use crate::dtype::DlElement;
use crate::extents::{Const, Dims, Extents, IndexArray};
use crate::layout::{LayoutLeft, LayoutRight, Mapping};

/// The byte ranges of a tile's elements, from `base`, with the tile's view made as a block makes
/// it: each range checked inside the tile's span, and the span inside the tile's bytes.
fn element_ranges<T: DlElement, E: Extents, L: TileLayout>(base: *mut u8) -> Vec<(usize, usize)> {
    // SAFETY: `base` stands in for the block's shared memory: 128-aligned, holding the tile's
    // `TILE_BYTES` (the caller's buffer is as long as the set), which nothing else reaches
    // while the tile lives; no element is read or written, only addresses are formed.
    let tile = unsafe { TileOf::<T, E, L>::at(base) };
    let mapping = *tile.view.mapping();
    let start = tile.view.data_handle() as usize - base as usize;
    let span = mapping.required_span_size();
    assert!(
        span <= TileOf::<T, E, L>::SPAN,
        "the mapping reaches past the tile's span"
    );
    assert!(TileOf::<T, E, L>::SPAN * size_of::<T>() <= TileOf::<T, E, L>::TILE_BYTES);
    let extents = tile.extents().to_array();
    let size: usize = extents.as_ref().iter().product();
    let mut ranges = Vec::with_capacity(size);
    for k in 0..size {
        // Index `k` in row-major order.
        let mut index = E::Index::zeros();
        let mut rest = k;
        for d in (0..E::RANK).rev() {
            index.as_mut()[d] = rest % extents.as_ref()[d];
            rest /= extents.as_ref()[d];
        }
        let offset = mapping.offset_of(&index);
        assert!(
            offset < span,
            "element {index:?} at {offset}, outside the span of {span}"
        );
        let first = start + offset * size_of::<T>();
        ranges.push((first, first + size_of::<T>()));
    }
    ranges
}

/// Checks that every element of the tile has bytes of its own inside the tile's bytes.
fn check_tile<T: DlElement, E: Extents, L: TileLayout>() {
    let mut memory = Box::new(Align128([0u8; 4096]));
    let bytes = TileOf::<T, E, L>::TILE_BYTES;
    assert!(bytes <= 4096);
    let mut ranges = element_ranges::<T, E, L>(memory.0.as_mut_ptr());
    let size = E::STATIC_SIZE.expect("static extents");
    assert_eq!(ranges.len(), size);
    assert!(TileOf::<T, E, L>::SPAN >= size);
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "two elements share bytes: {pair:?}");
    }
    if let Some(last) = ranges.last() {
        assert!(last.1 <= bytes, "an element past the tile's {bytes} bytes: {last:?}");
    }
}

#[test]
fn every_tile_covers_every_element_it_holds() {
    // Rank 0 holds one element, in every layout.
    check_tile::<f32, (), LayoutRight>();
    check_tile::<f32, (), LayoutLeft>();
    check_tile::<f32, (), RightPadded<1>>();
    check_tile::<f32, (), LeftPadded<3>>();
    check_tile::<f64, Dims<0>, RightPadded<1>>();
    check_tile::<u8, Dims<0>, LeftPadded<1>>();
    // Rank 1 (one line: no padding), rank 2 and 3, and empty tiles.
    check_tile::<f32, (Const<5>,), RightPadded<2>>();
    check_tile::<f32, (Const<5>,), LeftPadded<2>>();
    check_tile::<f32, (Const<4>, Const<6>), RightPadded<1>>();
    check_tile::<f32, (Const<4>, Const<6>), LeftPadded<1>>();
    check_tile::<u16, (Const<3>, Const<2>, Const<5>), RightPadded<3>>();
    check_tile::<u16, (Const<3>, Const<2>, Const<5>), LeftPadded<3>>();
    check_tile::<f32, (Const<3>, Const<2>, Const<5>), LayoutRight>();
    check_tile::<f32, (Const<3>, Const<2>, Const<5>), LayoutLeft>();
    check_tile::<f32, (Const<1>, Const<7>), RightPadded<4>>();
    check_tile::<f32, (Const<7>, Const<1>), LeftPadded<4>>();
    check_tile::<f32, (Const<0>, Const<7>), RightPadded<4>>();
    check_tile::<f32, (Const<0>,), LayoutRight>();
}

#[test]
fn a_rank_0_padded_tile_takes_bytes_for_its_element() {
    assert_eq!(TileOf::<f32, (), RightPadded<1>>::SPAN, 1);
    assert_eq!(TileOf::<f32, (), LeftPadded<1>>::SPAN, 1);
    assert_eq!(TileOf::<f32, Dims<0>, RightPadded<1>>::SPAN, 1);
    assert_eq!(TileOf::<f32, (), RightPadded<1>>::TILE_BYTES, 128);
    assert_eq!(TileOf::<f32, (Const<4>, Const<6>), RightPadded<1>>::SPAN, 3 * 7 + 6);
    assert_eq!(TileOf::<f32, (Const<4>, Const<6>), LeftPadded<1>>::SPAN, 5 * 5 + 4);
}

/// The byte ranges of a set's tiles at their offsets, as [`TileSet::tiles`] places them.
#[test]
fn tiles_of_a_set_share_no_bytes() {
    type A = TileOf<f32, (), RightPadded<1>>;
    type B = TileOf<f32, (Const<4>,)>;
    type C = TileOf<f64, Dims<0>, LeftPadded<2>>;
    type Set = (A, B, C);
    assert_eq!(<Set as TileSet>::BYTES, 3 * 128);
    let mut memory = Box::new(Align128([0u8; 4096]));
    let base = memory.0.as_mut_ptr();
    // SAFETY: as in `element_ranges`: a 128-aligned stand-in for the block's shared memory, as
    // long as the set, whose elements are not reached; only their addresses are compared.
    let (a, b, c) = unsafe { <Set as TileSet>::tiles(base) };
    let range = |start: *mut u8, span: usize, size: usize| {
        let start = start as usize - base as usize;
        (start, start + span * size)
    };
    let ranges = [
        range(a.view.data_handle().cast(), a.view.mapping().required_span_size(), 4),
        range(b.view.data_handle().cast(), b.view.mapping().required_span_size(), 4),
        range(c.view.data_handle().cast(), c.view.mapping().required_span_size(), 8),
    ];
    for (tile, &(start, end)) in ranges.iter().enumerate() {
        assert!(end > start, "tile {tile} spans no bytes");
        assert!(end <= <Set as TileSet>::BYTES, "tile {tile} ends past the set's bytes");
        for &(other_start, other_end) in &ranges[tile + 1..] {
            assert!(
                end <= other_start || other_end <= start,
                "tiles share bytes: {ranges:?}"
            );
        }
    }
}
