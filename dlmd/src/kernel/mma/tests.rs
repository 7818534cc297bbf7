use super::{M16N8K16, Mma};
use half::{bf16, f16};

/// Every element of the chunk is held by exactly one thread, in exactly one accumulator, and
/// each thread's accumulators come in pairs of neighbours.
fn deals_each_element_once<A: super::Atom, const WM: usize, const WN: usize, const FM: usize, const FN: usize>() {
    type_check::<A>();
    let (rows, cols) = (Mma::<A, WM, WN, FM, FN>::ROWS, Mma::<A, WM, WN, FM, FN>::COLS);
    let mut seen = vec![0u8; rows * cols];
    for thread in 0..Mma::<A, WM, WN, FM, FN>::THREADS {
        for fm in 0..FM {
            for fn_ in 0..FN {
                for r in 0..4 {
                    let [i, j] = Mma::<A, WM, WN, FM, FN>::element(thread, fm, fn_, r);
                    assert!(
                        i < rows && j < cols,
                        "thread {thread} holds [{i}, {j}], outside {rows} × {cols}"
                    );
                    // Accumulators `2 h` and `2 h + 1` are neighbours in a row, the first at an
                    // even column: the epilogue writes them with one store.
                    let first = Mma::<A, WM, WN, FM, FN>::element(thread, fm, fn_, r / 2 * 2);
                    assert!(
                        first[1].is_multiple_of(2),
                        "thread {thread}'s pair starts at odd column {}",
                        first[1]
                    );
                    assert_eq!([i, j], [first[0], first[1] + r % 2], "thread {thread}, accumulator {r}");
                    seen[i * cols + j] += 1;
                }
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n == 1),
        "some element held {:?} times",
        seen.iter().max()
    );
}

fn type_check<A: super::Atom>() {
    assert_eq!((A::M, A::N, A::K), (16, 8, 16));
}

#[test]
#[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
fn a_tiling_deals_each_element_of_its_chunk_to_one_thread_once() {
    deals_each_element_once::<M16N8K16<bf16>, 2, 4, 4, 4>();
    deals_each_element_once::<M16N8K16<bf16>, 4, 2, 2, 8>();
    deals_each_element_once::<M16N8K16<f16>, 1, 1, 1, 2>();
    deals_each_element_once::<M16N8K16<f16>, 2, 2, 4, 8>();
    deals_each_element_once::<M16N8K16<bf16>, 1, 4, 8, 2>();
}

#[test]
fn a_tilings_chunk_and_threads_follow_from_its_warps_and_atoms() {
    assert_eq!(Mma::<M16N8K16<bf16>, 2, 4, 4, 4>::THREADS, 256);
    assert_eq!(Mma::<M16N8K16<bf16>, 2, 4, 4, 4>::ROWS, 128);
    assert_eq!(Mma::<M16N8K16<bf16>, 2, 4, 4, 4>::COLS, 128);
    assert_eq!(Mma::<M16N8K16<f16>, 4, 2, 2, 8>::ROWS, 128);
    assert_eq!(Mma::<M16N8K16<f16>, 4, 2, 2, 8>::COLS, 128);
    // The lane layout of an `m16n8k16` accumulator (PTX ISA, "Matrix Fragments for mma.m16n8k16"):
    // lane 5 holds rows 1 and 9, columns 2 and 3.
    let at = |r| Mma::<M16N8K16<f16>, 1, 1, 1, 2>::element(5, 0, 0, r);
    assert_eq!([at(0), at(1), at(2), at(3)], [[1, 2], [1, 3], [9, 2], [9, 3]]);
}
