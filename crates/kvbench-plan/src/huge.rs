//! Memory for the bytes the op loops read at random places, in one huge page where the kernel
//! gives one.

/// Bytes the timed loop reads at random places (the value pool), held in memory aligned to
/// 2 MiB and offered to the kernel as a transparent huge page: the whole table then takes one
/// TLB entry instead of hundreds, which the engine's own pages would otherwise evict and walk
/// again on almost every check (docs/decisions.md, "The Rust worker's get loop").
pub struct HugeBytes {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    layout: std::alloc::Layout,
}

const HUGE_PAGE: usize = 2 << 20;

impl HugeBytes {
    /// A copy of `src` in huge-page-aligned memory (ordinary pages where the kernel has none).
    pub fn copy_of(src: &[u8]) -> HugeBytes {
        let size = src.len().max(1).div_ceil(HUGE_PAGE) * HUGE_PAGE;
        let layout = std::alloc::Layout::from_size_align(size, HUGE_PAGE).expect("a huge-page layout");
        // SAFETY: the layout's size is not zero.
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = std::ptr::NonNull::new(raw) else { std::alloc::handle_alloc_error(layout) };
        // SAFETY: [raw, raw + size) is ours and aligned; the advice must come before the first
        // write, which faults the pages in. It is only advice: a refusal leaves small pages.
        unsafe { libc::madvise(raw.cast(), size, libc::MADV_HUGEPAGE) };
        // SAFETY: src fits in the new allocation, which it cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), raw, src.len()) };
        HugeBytes { ptr, len: src.len(), layout }
    }
}

impl std::ops::Deref for HugeBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the first `len` bytes were written by `copy_of` and live until drop.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for HugeBytes {
    fn drop(&mut self) {
        // SAFETY: allocated in `copy_of` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: HugeBytes owns its bytes and hands out only shared references to them.
unsafe impl Send for HugeBytes {}
// SAFETY: as above; nothing mutates the bytes after `copy_of`.
unsafe impl Sync for HugeBytes {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool's copy holds exactly its source, starts on a huge-page boundary, and an empty
    /// source still makes a valid (empty) copy.
    #[test]
    fn huge_bytes_copy_their_source_on_a_huge_page_boundary() {
        let src: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let h = HugeBytes::copy_of(&src);
        assert_eq!(&h[..], &src[..]);
        assert_eq!(h.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(HugeBytes::copy_of(&[]).is_empty());
    }
}
