//! The heap blocks behind exported tensors (and XLA's buffers lent as tensors), kept for reuse
//! by the thread that frees them.
//!
//! An export allocates one small block (the managed struct, its shape and strides, the owner)
//! and its consumer frees it, often a moment later: a producer's `__dlpack__` is a hot path, and
//! a round trip through the global allocator costs more than the rest of an export. Blocks of at
//! most [`CLASS`] bytes all have that one size, and a thread keeps up to [`KEPT`] freed ones to
//! hand to its next exports. Blocks move between threads freely (a consumer may free on any
//! thread): each is a plain allocation of [`CLASS`] from the global allocator, and a thread's
//! kept blocks go back to it when the thread ends. Larger blocks go to the allocator directly.

use core::cell::RefCell;
use core::ptr::NonNull;
use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};

/// The one layout of small blocks: large enough for a versioned tensor of rank 8 with an owner
/// of four words.
const CLASS: Layout = match Layout::from_size_align(256, 16) {
    Ok(layout) => layout,
    Err(_) => panic!("256 bytes aligned to 16 is a valid layout"),
};

/// How many freed blocks a thread keeps.
const KEPT: usize = 8;

/// A thread's freed blocks, each an allocation of [`CLASS`] that nothing else references.
struct Kept {
    blocks: [Option<NonNull<u8>>; KEPT],
    len: usize,
}

impl Drop for Kept {
    fn drop(&mut self) {
        for block in self.blocks[..self.len].iter().flatten() {
            // SAFETY: each kept block is an allocation of `CLASS` that nothing references
            // (`release`), freed once, here.
            unsafe { dealloc(block.as_ptr(), CLASS) };
        }
    }
}

std::thread_local! {
    static KEPT_BLOCKS: RefCell<Kept> = const { RefCell::new(Kept { blocks: [None; KEPT], len: 0 }) };
}

/// The layout actually allocated for a block of `layout`: [`CLASS`] where it fits.
fn class_of(layout: Layout) -> Layout {
    if layout.size() <= CLASS.size() && layout.align() <= CLASS.align() {
        CLASS
    } else {
        layout
    }
}

/// A block for a value of `layout` (whose size is not zero), uninitialised: one this thread
/// freed before where there is one, a new allocation otherwise. Like `Box::new`, it calls
/// [`handle_alloc_error`] when the allocator fails.
pub(crate) fn allocate(layout: Layout) -> NonNull<u8> {
    let class = class_of(layout);
    if class == CLASS {
        // `try_with`/`try_borrow_mut`: a thread that is ending, or a global allocator that
        // exports tensors itself, allocates afresh.
        let reused = KEPT_BLOCKS
            .try_with(|kept| {
                let mut kept = kept.try_borrow_mut().ok()?;
                let len = kept.len.checked_sub(1)?;
                kept.len = len;
                kept.blocks[len].take()
            })
            .ok()
            .flatten();
        if let Some(block) = reused {
            return block;
        }
    }
    // SAFETY: the size is not zero (caller; `CLASS` is 256 bytes).
    NonNull::new(unsafe { alloc(class) }).unwrap_or_else(|| handle_alloc_error(class))
}

/// Gives back a block that [`allocate`] returned for `layout`, once whatever it held has been
/// dropped: kept for this thread's next exports while there is room, freed otherwise.
///
/// # Safety
///
/// `block` came from [`allocate`] with this `layout`, on any thread, and nothing references it
/// any more; it is given back once.
pub(crate) unsafe fn release(block: NonNull<u8>, layout: Layout) {
    let class = class_of(layout);
    if class == CLASS {
        let kept = KEPT_BLOCKS
            .try_with(|kept| {
                let Ok(mut kept) = kept.try_borrow_mut() else {
                    return false;
                };
                let len = kept.len;
                match kept.blocks.get_mut(len) {
                    Some(slot) => {
                        *slot = Some(block);
                        kept.len = len + 1;
                        true
                    }
                    None => false,
                }
            })
            .unwrap_or(false);
        if kept {
            return;
        }
    }
    // SAFETY: `block` was allocated with `class` (`allocate` chose it from the same `layout`)
    // and is freed once (caller).
    unsafe { dealloc(block.as_ptr(), class) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept_len() -> usize {
        KEPT_BLOCKS.with(|kept| kept.borrow().len)
    }

    #[test]
    fn a_freed_small_block_is_handed_out_again_on_the_same_thread() {
        let layout = Layout::new::<[u64; 16]>();
        // Whatever this thread kept before, taken out.
        let drained: Vec<_> = (0..KEPT).map(|_| allocate(layout)).collect();
        assert_eq!(kept_len(), 0);
        let first = allocate(layout);
        // SAFETY: from `allocate` with this layout, unreferenced, given back once.
        unsafe { release(first, layout) };
        assert_eq!(kept_len(), 1);
        let second = allocate(Layout::new::<[u8; 3]>());
        assert_eq!(second, first, "the block just freed is reused, for any small layout");
        assert_eq!(kept_len(), 0);
        // SAFETY: as above, with the layout it was asked for with.
        unsafe { release(second, Layout::new::<[u8; 3]>()) };
        for block in drained {
            // SAFETY: as above.
            unsafe { release(block, layout) };
        }
    }

    #[test]
    fn a_thread_keeps_at_most_eight_and_frees_the_rest() {
        let layout = Layout::new::<[u32; 4]>();
        let blocks: Vec<_> = (0..KEPT + 4).map(|_| allocate(layout)).collect();
        for block in &blocks {
            // Written through, as an export writes its block.
            // SAFETY: the block has room for 16 bytes and is this test's alone.
            unsafe { block.as_ptr().cast::<[u32; 4]>().write([1, 2, 3, 4]) };
        }
        for block in blocks {
            // SAFETY: from `allocate` with this layout, unreferenced, given back once.
            unsafe { release(block, layout) };
        }
        assert_eq!(kept_len(), KEPT);
    }

    #[test]
    fn large_blocks_go_to_the_allocator_and_blocks_move_between_threads() {
        let large = Layout::new::<[u64; 64]>();
        let block = allocate(large);
        let before = kept_len();
        // SAFETY: from `allocate` with this layout, unreferenced, given back once.
        unsafe { release(block, large) };
        assert_eq!(kept_len(), before, "a large block is not kept");

        let small = Layout::new::<[u64; 2]>();
        let address = allocate(small).as_ptr() as usize;
        let kept_there = std::thread::spawn(move || {
            let block = NonNull::new(address as *mut u8).expect("allocated above");
            // SAFETY: allocated above with this layout, unreferenced, given back once, here.
            unsafe { release(block, small) };
            kept_len()
        })
        .join()
        .expect("the thread gives the block back");
        // That thread's kept block was freed when the thread ended.
        assert_eq!(kept_there, 1);
    }
}
