//! A second view cut as the first: the chunks of a view paired with the same chunks of a view
//! of the same extents ([`Chunks::with_twin`]), so that whoever writes a chunk of one writes
//! the same chunk of the other (the keys' and the values' gradients of attention's backward
//! pass, made together).

use super::rows::{Rows, Token};
use super::{Chunk, Chunks};
use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use crate::kernel::KernelSpace;
use crate::layout::Layout;
use crate::view::{Mdspan, Unique};
use core::marker::PhantomData;

impl<U: DlElement, F: Extents, M: Layout, S: KernelSpace> Rows for Chunk<'_, U, F, M, S> {
    #[inline(always)]
    fn at(&self, origin: &[usize], shape: &[usize], _: Token) -> Self {
        let mut at = F::Index::zeros();
        let mut side = F::Index::zeros();
        for d in 0..F::RANK {
            at.as_mut()[d] = origin.get(d).copied().unwrap_or(0);
            side.as_mut()[d] = shape.get(d).copied().unwrap_or(0);
        }
        Chunk {
            data: self.data,
            mapping: self.mapping,
            origin: at,
            shape: side,
            rows: (),
            segment: None,
            view: PhantomData,
        }
    }

    #[inline(always)]
    fn cut(self, first: usize, count: usize, _: Token) -> Self {
        // The same lines as the paired chunk's (`Chunk::lines`, which runs on the device only).
        #[cfg(target_arch = "nvptx64")]
        {
            self.lines(first, count)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (first, count);
            self
        }
    }
}

impl<'v, T: DlElement, E: Extents, L: Layout, S: KernelSpace> Chunks<'v, T, E, L, S> {
    /// The chunks paired with the same chunks of `twin`, a view of the same extents: each
    /// chunk then carries the chunk of `twin` at the same origin and of the same box, which
    /// [`Chunk::split_twin`] hands out, and a specialised block's warpgroup the same rows of it
    /// as of its own part. `None` where the extents differ.
    ///
    /// ```ignore
    /// // dk, dv: b × h × s × d; chunks of (1, 1, 128, d) of both.
    /// let Some(chunks) = block.chunks(dk).with_twin(dv) else { return };
    /// ```
    #[allow(clippy::type_complexity)]
    #[inline(always)]
    pub fn with_twin<'r, U, M>(
        self,
        twin: Mdspan<'r, U, E, M, S, Unique>,
    ) -> Option<Chunks<'v, T, E, L, S, Chunk<'r, U, E, M, S>>>
    where
        U: DlElement,
        M: Layout,
    {
        let theirs = twin.extents().to_array();
        if !self.extents_start_with(theirs.as_ref()) {
            return None;
        }
        Some(self.carrying(Chunk {
            data: twin.data_handle(),
            mapping: *twin.mapping(),
            origin: E::Index::zeros(),
            shape: theirs,
            rows: (),
            segment: None,
            view: PhantomData,
        }))
    }
}

impl<'v, 'r, T, E, L, S, U, M> Chunk<'v, T, E, L, S, Chunk<'r, U, E, M, S>>
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
    U: DlElement,
    M: Layout,
{
    /// The chunk, and the same chunk of its twin ([`Chunks::with_twin`]): both written by
    /// whoever writes this one.
    #[allow(clippy::type_complexity)]
    #[must_use]
    #[inline(always)]
    pub fn split_twin(self) -> (Chunk<'v, T, E, L, S>, Chunk<'r, U, E, M, S>) {
        let Chunk {
            data,
            mapping,
            origin,
            shape,
            rows,
            segment,
            view,
        } = self;
        (
            Chunk {
                data,
                mapping,
                origin,
                shape,
                rows: (),
                segment,
                view,
            },
            rows,
        )
    }
}
