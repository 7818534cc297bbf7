//! Neighbouring elements as one value aligned to their size, which the compiler moves with one
//! vector load or store: what a thread's fours of a view (`kernel::vector`) and runs of a
//! tile are read and written as.

macro_rules! aligned {
    ($($name:ident $align:literal),*) => {$(
        #[doc = concat!("`K` elements aligned to ", stringify!($align), " bytes.")]
        #[repr(C, align($align))]
        #[derive(Clone, Copy)]
        // Tiles read runs of 8 and 16 bytes on both targets; views' fours of 4 bytes in kernels.
        #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
        pub(crate) struct $name<T, const K: usize>(pub(crate) [T; K]);
    )*};
}
aligned!(Align4 4, Align8 8, Align16 16);
