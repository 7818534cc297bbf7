use super::{LeftPadded, LeftSwizzled, RightPadded, RightSwizzled, TileLayout, TileOf, TileSet};
use crate::aligned::Align128;
use crate::dtype::DlElement;
use crate::extents::{Const, Dims, Extents, IndexArray};
use crate::kernel::swizzle::{Swizzle, Swizzle32, Swizzle64, Swizzle128};
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
        let offset = L::offset_of::<T, E>(&mapping, &index);
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
    // Swizzled: one panel, several, rows fewer than a period, and every swizzle.
    check_tile::<u16, (Const<8>, Const<64>), RightSwizzled<Swizzle128>>();
    check_tile::<u16, (Const<8>, Const<128>), RightSwizzled<Swizzle128>>();
    check_tile::<u16, (Const<3>, Const<64>), RightSwizzled<Swizzle128>>();
    check_tile::<u16, (Const<64>, Const<8>), LeftSwizzled<Swizzle128>>();
    check_tile::<u16, (Const<128>, Const<5>), LeftSwizzled<Swizzle128>>();
    check_tile::<f32, (Const<16>, Const<16>), RightSwizzled<Swizzle64>>();
    check_tile::<u8, (Const<16>, Const<64>), RightSwizzled<Swizzle32>>();
    check_tile::<u64, (Const<12>, Const<4>), LeftSwizzled<Swizzle32>>();
    check_tile::<u16, (Const<0>, Const<64>), RightSwizzled<Swizzle128>>();
}

/// The element offset of `[line, x]` in a swizzled tile of `T`, `lines` lines of `line_len`
/// elements (`x` along the line), as [`Swizzle::offset`] places it in its panel.
fn swizzled_reference<T, S: Swizzle>(lines: usize, line: usize, x: usize) -> usize {
    let per_panel = S::BYTES / size_of::<T>();
    (x / per_panel * lines * S::BYTES + S::offset(line, x % per_panel * size_of::<T>())) / size_of::<T>()
}

/// The offsets of a swizzled tile's elements, by line and position along it.
fn swizzled_offsets<T: DlElement, E: Extents<Index = [usize; 2]>, L: TileLayout>() -> Vec<Vec<usize>> {
    let [first, last] = super::static_shape::<E>();
    let mut memory = Box::new(Align128([0u8; 16384]));
    assert!(TileOf::<T, E, L>::TILE_BYTES <= 16384);
    // SAFETY: as in `element_ranges`: a 128-aligned stand-in for the block's shared memory, as
    // long as the tile; no element is read or written, only the storage's mapping is taken.
    let tile = unsafe { TileOf::<T, E, L>::at(memory.0.as_mut_ptr()) };
    let mapping = *tile.view.mapping();
    let (lines, len) = if L::FIRST_FASTEST { (last, first) } else { (first, last) };
    (0..lines)
        .map(|line| {
            (0..len)
                .map(|x| {
                    let index = if L::FIRST_FASTEST { [x, line] } else { [line, x] };
                    L::offset_of::<T, E>(&mapping, &index)
                })
                .collect()
        })
        .collect()
}

/// Checks a swizzled tile against the panels of [`Swizzle::offset`], and for what it is for:
/// each 16-byte piece stays whole (its elements neighbours, 16-aligned), each 32-byte sector of
/// a line lands in one 32-byte sector of the tile, and the same piece of 8 lines in a row meets
/// 8 different groups of 4 banks, as `ldmatrix` reads them.
fn check_swizzled<T: DlElement, E: Extents<Index = [usize; 2]>, L: TileLayout, S: Swizzle>() {
    let offsets = swizzled_offsets::<T, E, L>();
    let lines = offsets.len();
    let per_piece = 16 / size_of::<T>();
    for (line, row) in offsets.iter().enumerate() {
        for (x, &offset) in row.iter().enumerate() {
            assert_eq!(offset, swizzled_reference::<T, S>(lines, line, x), "[{line}, {x}]");
            let piece_start = row[x - x % per_piece];
            assert_eq!(offset, piece_start + x % per_piece, "a piece split at [{line}, {x}]");
            assert!((piece_start * size_of::<T>()).is_multiple_of(16));
            let sector_start = row[x - x % (2 * per_piece)] * size_of::<T>();
            assert_eq!(
                offset * size_of::<T>() / 32,
                sector_start / 32,
                "a sector split at [{line}, {x}]"
            );
        }
    }
    for first in (0..lines.saturating_sub(7)).step_by(8) {
        for x in (0..offsets[0].len()).step_by(per_piece) {
            let mut groups: Vec<usize> = (first..first + 8)
                .map(|line| offsets[line][x] * size_of::<T>() % 128 / 16)
                .collect();
            groups.sort_unstable();
            groups.dedup();
            assert_eq!(groups.len(), 8, "lines {first}.. at {x} share banks");
        }
    }
}

#[test]
// Offsets alone (the tile's view is formed as in `every_tile_covers_every_element_it_holds`,
// which Miri runs, and no element is reached).
#[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
fn swizzled_tiles_keep_pieces_whole_sectors_together_and_banks_apart() {
    check_swizzled::<u16, (Const<16>, Const<64>), RightSwizzled<Swizzle128>, Swizzle128>();
    check_swizzled::<u16, (Const<64>, Const<128>), RightSwizzled<Swizzle128>, Swizzle128>();
    check_swizzled::<u16, (Const<64>, Const<32>), LeftSwizzled<Swizzle128>, Swizzle128>();
    check_swizzled::<u16, (Const<32>, Const<32>), RightSwizzled<Swizzle64>, Swizzle64>();
    check_swizzled::<u16, (Const<16>, Const<64>), RightSwizzled<Swizzle64>, Swizzle64>();
    check_swizzled::<f32, (Const<8>, Const<24>), LeftSwizzled<Swizzle32>, Swizzle32>();
    check_swizzled::<u8, (Const<24>, Const<64>), RightSwizzled<Swizzle32>, Swizzle32>();
}

#[test]
fn a_swizzled_tile_has_the_row_major_span_of_its_elements() {
    type A = TileOf<u16, (Const<128>, Const<64>), RightSwizzled<Swizzle128>>;
    type B = TileOf<u16, (Const<64>, Const<128>), LeftSwizzled<Swizzle128>>;
    assert_eq!(A::SPAN, 128 * 64);
    assert_eq!(B::TILE_BYTES, 64 * 128 * 2);
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

/// `offset_of_moved` is the moved index's `offset_of` for every move of up to 17 that stays
/// inside the tile, along the lines (whole periods take the shortcut, others not) and across
/// them.
fn check_moved<T: DlElement, E: Extents<Index = [usize; 2]>, L: TileLayout>() {
    let [first, last] = super::static_shape::<E>();
    let mut memory = Box::new(Align128([0u8; 16384]));
    assert!(TileOf::<T, E, L>::TILE_BYTES <= 16384);
    // SAFETY: as in `element_ranges`: a 128-aligned stand-in for the block's shared memory, as
    // long as the tile; no element is read or written, only the storage's mapping is taken.
    let tile = unsafe { TileOf::<T, E, L>::at(memory.0.as_mut_ptr()) };
    let mapping = *tile.view.mapping();
    for i in 0..first {
        for j in 0..last {
            for slow in 0..2 {
                let extent = if slow == 0 { first } else { last };
                let at = if slow == 0 { i } else { j };
                // Moves of 0 to 17: none, whole periods (8, 16) and the others between.
                for lines in 0..(extent - at).min(18) {
                    let mut moved = [i, j];
                    moved[slow] += lines;
                    assert_eq!(
                        L::offset_of_moved::<T, E>(&mapping, &[i, j], slow, lines),
                        L::offset_of::<T, E>(&mapping, &moved),
                        "[{i}, {j}] moved {lines} along {slow}"
                    );
                }
            }
        }
    }
}

#[test]
// Offsets alone (the tile's view is formed as in `every_tile_covers_every_element_it_holds`,
// which Miri runs, and no element is reached).
#[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
fn a_move_by_whole_lines_lands_where_the_moved_index_does() {
    // Two panels each, lines past a period and not a multiple of it.
    check_moved::<f32, (Const<19>, Const<64>), RightSwizzled<Swizzle128>>();
    check_moved::<u64, (Const<32>, Const<11>), LeftSwizzled<Swizzle128>>();
    check_moved::<f32, (Const<17>, Const<32>), RightSwizzled<Swizzle64>>();
    check_moved::<u8, (Const<12>, Const<64>), RightSwizzled<Swizzle32>>();
    check_moved::<f32, (Const<9>, Const<7>), RightPadded<1>>();
    check_moved::<u16, (Const<8>, Const<5>), LeftPadded<8>>();
}
