//! Buffers to read into, the chunks of bytes handed to the hasher, and the pieces a chunk's
//! bytes lie in (side by side, or spread a cache line apart for SIMD lanes).

use std::io;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::InputError;
use super::mmap;

/// Where the buffers of the pool start: a page, which satisfies every `O_DIRECT` memory
/// alignment Linux asks for (`stx_dio_mem_align` is at most the logical block size).
pub(super) const BUFFER_ALIGN: usize = 4096;

/// How many cache lines apart the buffered reads of successive buffers start past their page
/// boundary, cycling over a page: 64 lines of 64 bytes, every set of an L1 cache of 32 KiB,
/// 8 ways. Each lane of a multi-buffer kernel hashes from its own buffer; had they all started
/// on a page boundary, every lane's row of a block would fall in the same sets of L1, 32
/// lanes bringing their rows into the same two sets of 8 ways at every block and each row
/// coming again from L2 (see `docs/performance-choices.md`, "MD5 lanes 4 KiB apart on Zen 4"). A
/// worker's pool holds two rounds of the widest lane set, 64 buffers: made one after the
/// other, they start at 64 different lines, so the lanes' rows spread over every set.
/// On Zen 4, `mtsum -p 2 -a md5`, cached file, process CPU, medians of 7 interleaved runs:
/// 4 GiB (32 lanes) 961 → 904 ms, with the AVX2 kernel 1300 → 985; 2 GiB (16 lanes)
/// 580 → 528; `-p 1`, 4 GiB, 1052 → 945; SHA-256, SHA-512 and `-r` level.
/// `O_DIRECT` reads keep the page boundary (the memory alignment it requires); mapped windows
/// are the page cache's own pages.
const STAGGER_LINES: usize = 64;

/// The size of a cache line, the step of the stagger.
pub(super) const CACHE_LINE: usize = 64;

/// The stagger of the next buffer made, in lines (see [`STAGGER_LINES`]).
static NEXT_STAGGER: AtomicUsize = AtomicUsize::new(0);

/// Memory to read into, handed from reader to hasher and back. It starts on a page boundary
/// (as `O_DIRECT` requires) and is allocated, fallibly, when first needed: a worker that only
/// maps windows, or only meets small files, never allocates its full share. Buffered reads
/// for a lane start a few cache lines past the boundary ([`RangeReader::staggered`](super::RangeReader::staggered)).
pub struct Buffer {
    storage: Vec<u8>,
    /// Where buffered reads for a lane start past the page boundary: a number of cache
    /// lines, a different one for each buffer of a pool (see [`STAGGER_LINES`]).
    pub(super) lead: usize,
}

impl Default for Buffer {
    fn default() -> Buffer {
        let line = NEXT_STAGGER.fetch_add(1, Ordering::Relaxed) % STAGGER_LINES;
        Buffer {
            storage: Vec::new(),
            lead: line * CACHE_LINE,
        }
    }
}

impl Buffer {
    /// An empty buffer; it allocates on first use.
    pub fn new() -> Buffer {
        Buffer::default()
    }

    fn aligned_start(&self) -> usize {
        self.storage.as_ptr().align_offset(BUFFER_ALIGN)
    }

    /// The first `len` bytes, page-aligned, growing the buffer if needed. A buffer grown for
    /// `len` bytes has room for `len + 1` (it holds `BUFFER_ALIGN` more, and starts less than
    /// that before its aligned start): the extra byte of a file's last read costs no memory.
    pub(super) fn get_mut(&mut self, len: usize) -> io::Result<&mut [u8]> {
        if self.storage.is_empty() || self.storage.len() - self.aligned_start() < len {
            let mut storage = Vec::new();
            storage
                .try_reserve_exact(len + BUFFER_ALIGN)
                .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
            storage.resize(len + BUFFER_ALIGN, 0);
            self.storage = storage;
        }
        let start = self.aligned_start();
        Ok(&mut self.storage[start..start + len])
    }
}

/// Bytes ready to hash: part of a buffer that was read into, or a mapped window.
pub struct Chunk {
    pub(super) buffer: Buffer,
    pub(super) bytes: Bytes,
}

pub(super) enum Bytes {
    /// `len` bytes laid out by `spacing` from `start` in the buffer's aligned memory.
    Read {
        start: usize,
        len: usize,
        spacing: Spacing,
    },
    Mapped(mmap::Window),
}

impl Bytes {
    /// The bytes `range` of the buffer's aligned memory, side by side.
    pub(super) fn contiguous(range: Range<usize>) -> Bytes {
        Bytes::Read {
            start: range.start,
            len: range.len(),
            spacing: Spacing::contiguous(range.len()),
        }
    }
}

impl Chunk {
    /// The bytes to hash, where they lie: side by side (one piece), or the leaves of a
    /// spread read ([`RangeReader::spread`](super::RangeReader::spread)) a cache line further apart than their length.
    pub fn pieces(&self) -> Pieces<'_> {
        match &self.bytes {
            &Bytes::Read {
                start,
                len,
                spacing,
            } => {
                let at = self.buffer.aligned_start() + start;
                Pieces {
                    span: &self.buffer.storage[at..at + spacing.span(len)],
                    len,
                    spacing,
                }
            }
            Bytes::Mapped(window) => Pieces::contiguous(window.bytes()),
        }
    }

    /// The bytes to hash if they lie side by side, as those of every chunk do but a spread
    /// read's.
    pub fn contiguous(&self) -> Option<&[u8]> {
        self.pieces().contiguous_bytes()
    }

    /// How many bytes of the input the chunk holds.
    pub fn len(&self) -> usize {
        self.pieces().len()
    }

    /// Whether the chunk holds no byte: a stream's end.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives the buffer back for the next read, with [`InputError::Changed`] if the bytes
    /// just hashed were not the file's (a mapped page beyond its end, see the `mmap` module).
    pub fn finish(self) -> (Buffer, Result<(), InputError>) {
        let ok = match &self.bytes {
            Bytes::Mapped(window) if window.faulted() => Err(InputError::Changed),
            _ => Ok(()),
        };
        (self.buffer, ok)
    }
}

/// A chunk's bytes where they lie in memory: `len` bytes in pieces of
/// [`Pieces::piece_len`] bytes, each starting [`Pieces::stride`] bytes after the one before,
/// the last one shorter if need be. Bytes side by side are one piece. Whatever the layout,
/// feeding [`Pieces::iter`] in order to a hasher hashes the chunk; only a hasher of equal
/// messages (a chunk's leaves, in SIMD lanes) has a use for the stride.
#[derive(Clone, Copy, Debug)]
pub struct Pieces<'a> {
    /// From the first piece's start to the last one's end.
    span: &'a [u8],
    len: usize,
    spacing: Spacing,
}

impl<'a> Pieces<'a> {
    /// `bytes`, as one piece.
    pub fn contiguous(bytes: &'a [u8]) -> Pieces<'a> {
        Pieces {
            span: bytes,
            len: bytes.len(),
            spacing: Spacing::contiguous(bytes.len()),
        }
    }

    /// `len` bytes in pieces of `piece` bytes laid out in `span`, piece `i` at
    /// `span[i * stride ..]` (the last one shorter if need be, ending `span`): what a caller
    /// that reads leaves into places of its own hands to
    /// [`JobHasher::update_pieces`](crate::layout::JobHasher::update_pieces). `None` if
    /// `piece` is 0, `stride` less than `piece`, or `span` not the length the pieces take.
    pub fn spread(span: &'a [u8], len: usize, piece: usize, stride: usize) -> Option<Pieces<'a>> {
        let spacing = Spacing { piece, stride };
        (piece > 0 && stride >= piece && span.len() == spacing.span(len)).then_some(Pieces {
            span,
            len,
            spacing,
        })
    }

    /// The bytes of the input they hold.
    pub fn len(self) -> usize {
        self.len
    }

    /// Whether they hold no byte.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The length of every piece but the last, which may be shorter.
    pub fn piece_len(self) -> usize {
        self.spacing.piece
    }

    /// How far apart two successive pieces start, at least [`Pieces::piece_len`].
    pub fn stride(self) -> usize {
        self.spacing.stride
    }

    /// The pieces of [`Pieces::piece_len`] bytes: all of them, or all but a shorter last.
    pub fn whole(self) -> usize {
        self.len / self.spacing.piece
    }

    /// The memory from the first piece's start to the last one's end: piece `i` is its bytes
    /// `i * stride ..`, of `piece_len` bytes (the last to the end).
    pub fn span(self) -> &'a [u8] {
        self.span
    }

    /// The bytes if they lie side by side (at most one piece).
    pub fn contiguous_bytes(self) -> Option<&'a [u8]> {
        (self.spacing.count(self.len) <= 1).then_some(self.span)
    }

    /// The pieces in order.
    pub fn iter(self) -> impl Iterator<Item = &'a [u8]> {
        let Spacing { piece, stride } = self.spacing;
        (0..self.spacing.count(self.len)).map(move |i| {
            let start = i * stride;
            &self.span[start..start + piece.min(self.len - i * piece)]
        })
    }
}

/// How a read lays the file's bytes out in its buffer: pieces of `piece` bytes, each starting
/// `stride` bytes after the one before. Contiguous when the two are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Spacing {
    piece: usize,
    stride: usize,
}

impl Spacing {
    /// `len` bytes side by side, as one piece.
    pub(super) fn contiguous(len: usize) -> Spacing {
        let piece = len.max(1);
        Spacing {
            piece,
            stride: piece,
        }
    }

    /// Pieces of `piece` bytes one cache line further apart than their length, rounded up to
    /// a line: successive pieces start on successive lines of a page (see
    /// [`RangeReader::spread`](super::RangeReader::spread)).
    pub(super) fn spread(piece: NonZeroUsize) -> Spacing {
        let piece = piece.get();
        Spacing {
            piece,
            stride: piece.next_multiple_of(CACHE_LINE) + CACHE_LINE,
        }
    }

    /// The pieces that `len` bytes make, the last one shorter if need be.
    pub(super) fn count(self, len: usize) -> usize {
        len.div_ceil(self.piece)
    }

    /// The bytes of buffer that `len` bytes take: from the first piece's start to the last
    /// one's end.
    pub(super) fn span(self, len: usize) -> usize {
        match self.count(len) {
            0 => 0,
            n => (n - 1) * self.stride + (len - (n - 1) * self.piece),
        }
    }

    /// The places in `buf` of `need` bytes laid out in pieces, and of `extra` bytes more
    /// right after the last piece (a file's last read asks for one more): one slice per
    /// piece, to read into with one vectored read.
    pub(super) fn slices(
        self,
        buf: &mut [u8],
        need: usize,
        extra: usize,
    ) -> Vec<io::IoSliceMut<'_>> {
        let count = self.count(need).max(1);
        let mut slices = Vec::with_capacity(count);
        let mut rest = buf;
        for k in 0..count {
            if k + 1 == count {
                slices.push(io::IoSliceMut::new(
                    &mut rest[..need + extra - k * self.piece],
                ));
                break;
            }
            let (place, after) = std::mem::take(&mut rest).split_at_mut(self.stride);
            slices.push(io::IoSliceMut::new(&mut place[..self.piece]));
            rest = after;
        }
        slices
    }
}
