//! The range reader: the bytes of one job of a sized file as a sequence of chunks, in the
//! file's read mode.

use std::num::NonZeroUsize;
use std::ops::Range;

use super::buffer::{Buffer, Bytes, Chunk, Spacing};
use super::error::{InputError, os_message};
use super::file::{Backing, SizedFile};
use super::mmap;
use super::mode::{ReadMode, set_direct};
use super::pread::{IOV_MAX, read_full, read_full_vectored};

impl SizedFile {
    /// A reader of the bytes `range` as chunks of about `chunk_size` bytes, in the file's
    /// read mode.
    pub fn range_reader(&self, range: Range<u64>, chunk_size: usize) -> RangeReader<'_> {
        RangeReader {
            file: self,
            pos: self.start + range.start,
            end: self.start + range.end,
            chunk: chunk_size.max(1),
            place: Place::Aligned,
        }
    }
}

/// Reads the bytes of one job of a sized file as a sequence of [`Chunk`]s.
pub struct RangeReader<'a> {
    file: &'a SizedFile,
    /// The next byte to deliver and the end of the range, as offsets in the file (the
    /// range's own plus the file's `start`), which is what reads and their alignment need.
    pos: u64,
    end: u64,
    chunk: usize,
    /// Where buffered reads put the bytes in the buffer.
    place: Place,
}

/// Where a [`RangeReader`]'s buffered reads put the bytes in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Side by side from the page boundary.
    Aligned,
    /// Side by side from [`Buffer::lead`] bytes past the page boundary.
    Staggered,
    /// In pieces of this many bytes, a cache line further apart than their length.
    Spread(NonZeroUsize),
}

impl RangeReader<'_> {
    /// Starts buffered reads a buffer's own number of cache lines past the page boundary (see
    /// `STAGGER_LINES`): for the chunks of a message that has a lane to itself, so that the
    /// lanes, each hashing from its own buffer, do not share L1 sets. Not for a chunk whose
    /// leaves fill the lanes: moving the whole chunk leaves them as far apart from each other
    /// as they were, so the lead buys nothing there, and leaves of 4 KiB would straddle two
    /// pages (`mtsum -p 1 -a md5 -t rfc6962 -l 4K`, 2 GiB, hashing thread's CPU, medians of
    /// 7, every read staggered: 315 → 354 ms; runs of one binary against itself differ by
    /// up to 5 % on this host). Such a chunk's leaves are separated from each other by
    /// [`RangeReader::spread`].
    pub fn staggered(mut self) -> Self {
        self.place = Place::Staggered;
        self
    }

    /// Reads each chunk (by `pread` or `RWF_DONTCACHE`) in pieces of `piece` bytes that start
    /// one cache line further apart than their length (rounded up to a line), with one
    /// `preadv2` and an iovec per piece: for a chunk of whole leaves that a multi-buffer
    /// kernel hashes side by side. Leaves a multiple of 4 KiB apart put every lane's row of a
    /// block into the same sets of L1 (on Zen 4, 8 ways of 4 KiB), each row coming again from
    /// L2; a line further apart each, they fall into successive sets. The same bytes are
    /// copied by the same number of calls; only their places change (see
    /// `docs/performance-choices.md`, "Chunks of leaves read a line apart").
    ///
    /// A chunk of one piece, or of more pieces than a vectored read takes (1024), is read
    /// side by side; `O_DIRECT` reads and mapped windows are always side by side.
    pub fn spread(mut self, piece: NonZeroUsize) -> Self {
        self.place = Place::Spread(piece);
        self
    }

    /// Whether every byte of the range was delivered.
    pub fn is_done(&self) -> bool {
        self.pos >= self.end
    }

    /// The offset of the next byte to deliver (counted from the file's start, as the range).
    pub fn position(&self) -> u64 {
        self.pos - self.file.start
    }

    /// The next bytes of the range, read into `buffer` or mapped. On failure the buffer comes
    /// back with the error. Call only while [`RangeReader::is_done`] is false.
    pub fn next_chunk(&mut self, mut buffer: Buffer) -> Result<Chunk, (Buffer, InputError)> {
        debug_assert!(!self.is_done());
        let bytes = match self.file.read_mode() {
            ReadMode::Mmap => match self.map_next() {
                Ok(Some(window)) => Ok(Bytes::Mapped(window)),
                Ok(None) => self.read_next(&mut buffer, 0),
                Err(e) => Err(e),
            },
            ReadMode::Direct => self.read_direct(&mut buffer),
            ReadMode::DontCache => self.read_next(&mut buffer, libc::RWF_DONTCACHE),
            ReadMode::Pread => self.read_next(&mut buffer, 0),
        };
        match bytes {
            Ok(bytes) => Ok(Chunk { buffer, bytes }),
            Err(e) => Err((buffer, e)),
        }
    }

    /// Whether the chunk that ends at `stop` ends the file too (its length as opened).
    fn ends_file(&self, stop: u64) -> bool {
        stop == self.end && stop == self.file.stamp.len
    }

    /// The next chunks of `readers`, ranges of one file of which each but the last ends with
    /// this chunk where the next begins: the two halves of a small file, which the `mtsum`
    /// layout makes two leaves. Buffered reads fill them all with one `preadv`, one system
    /// call per file instead of one per leaf (a second `pread` into a second buffer cost a
    /// loop of `open`, `pread`, `close` over 20 000 small files about 0.5 µs per file on a
    /// 2-core EPYC; `mtsum -p 2 -a sha256 -r` over them took 3 % less CPU, md5 the same).
    /// Other read modes, readers that do not
    /// follow one another, and a read that fails or falls short (each reader then reports it
    /// as [`RangeReader::next_chunk`] does) read one reader after another. One result per
    /// reader, in order, each with its buffer.
    ///
    /// # Panics
    /// If there are not as many buffers as readers.
    pub fn next_chunks(
        readers: &mut [RangeReader<'_>],
        mut buffers: Vec<Buffer>,
    ) -> Vec<Result<Chunk, (Buffer, InputError)>> {
        assert_eq!(readers.len(), buffers.len(), "a buffer per reader");
        let flags = match readers.first().map(|r| r.file.read_mode()) {
            Some(ReadMode::Pread) => Some(0),
            Some(ReadMode::DontCache) => Some(libc::RWF_DONTCACHE),
            _ => None,
        };
        let follow = readers.windows(2).all(|w| {
            std::ptr::eq(w[0].file, w[1].file)
                && w[0].pos + w[0].next_len() as u64 == w[0].end
                && w[0].end == w[1].pos
        });
        if let Some(flags) = flags.filter(|_| follow && readers.len() <= IOV_MAX)
            && let Ok(bytes) = RangeReader::read_together(readers, &mut buffers, flags)
        {
            let chunks = bytes.into_iter().zip(buffers);
            return chunks
                .map(|(bytes, buffer)| Ok(Chunk { buffer, bytes }))
                .collect();
        }
        let chunks = readers.iter_mut().zip(buffers);
        chunks.map(|(r, buffer)| r.next_chunk(buffer)).collect()
    }

    /// The bytes of the next buffered read.
    fn next_len(&self) -> usize {
        (self.end - self.pos).min(self.chunk as u64) as usize
    }

    /// The next chunk by buffered reads (`pread`, or `preadv2` with `flags`).
    fn read_next(&mut self, buffer: &mut Buffer, flags: libc::c_int) -> Result<Bytes, InputError> {
        let mut bytes = RangeReader::read_together(
            std::slice::from_mut(self),
            std::slice::from_mut(buffer),
            flags,
        )?;
        Ok(bytes.pop().expect("one chunk"))
    }

    /// Where the next buffered read of `n` bytes goes in `buffer`: how far past its page
    /// boundary, and in what pieces.
    fn place_of(&self, buffer: &Buffer, n: usize) -> (usize, Spacing) {
        match self.place {
            Place::Aligned => (0, Spacing::contiguous(n)),
            Place::Staggered => (buffer.lead, Spacing::contiguous(n)),
            Place::Spread(piece) => match Spacing::spread(piece) {
                spread if (2..=IOV_MAX).contains(&spread.count(n)) => (0, spread),
                _ => (0, Spacing::contiguous(n)),
            },
        }
    }

    /// The next chunk of each of `readers`, which follow one another in one file (see
    /// [`RangeReader::next_chunks`]), into `buffers`, by buffered reads (`preadv`, or
    /// `preadv2` with `flags`) that fill them in turn, each laid out as its reader's place
    /// says. The file's last chunk asks for one byte more, at no cost: a file system that
    /// misreports the size gives it (see [`SizedFile::check_unchanged`]). No reader moves
    /// unless every chunk is whole.
    fn read_together(
        readers: &mut [RangeReader<'_>],
        buffers: &mut [Buffer],
        flags: libc::c_int,
    ) -> Result<Vec<Bytes>, InputError> {
        let last = readers.last().expect("a reader");
        let (file, start) = (last.file, readers[0].pos);
        let at_end = last.ends_file(last.pos + last.next_len() as u64);
        let (mut need, mut parts, mut slices) = (0, Vec::new(), Vec::new());
        for (i, (reader, buffer)) in readers.iter().zip(buffers.iter_mut()).enumerate() {
            let n = reader.next_len();
            let (lead, spacing) = reader.place_of(buffer, n);
            // The extra byte of the file's last read goes right after the last piece.
            let extra = usize::from(at_end && i + 1 == readers.len());
            let buf = &mut buffer.get_mut(lead + spacing.span(n) + extra)?[lead..];
            slices.extend(spacing.slices(buf, n, extra));
            parts.push(Bytes::Read {
                start: lead,
                len: n,
                spacing,
            });
            need += n;
        }
        let got = match &file.file {
            Backing::File(f) => read_full_vectored(f, &mut slices, need, start, flags, None)?,
            #[cfg(feature = "remote")]
            Backing::Remote(object) => object.read_at(&mut slices, need, start).map(|()| need)?,
        };
        if got < need {
            return Err(file.ended_early());
        }
        if at_end {
            file.saw_end(got > need);
        }
        for reader in readers.iter_mut() {
            reader.pos += reader.next_len() as u64;
        }
        Ok(parts)
    }

    /// The next chunk by `O_DIRECT`: whole aligned blocks from the block holding `pos`, of
    /// which the part inside the range is delivered. The last block of the file is read whole
    /// too; the kernel returns only the bytes up to the end of the file.
    fn read_direct(&mut self, buffer: &mut Buffer) -> Result<Bytes, InputError> {
        let align = self.file.align;
        let file = self.file.file.local()?;
        let base = self.pos - self.pos % align;
        let skew = (self.pos - base) as usize;
        let span = self.end.next_multiple_of(align) - base;
        let want = (self.chunk as u64).next_multiple_of(align).min(span) as usize;
        let stop = (self.end - base).min(want as u64) as usize;
        let buf = buffer.get_mut(want)?;
        let got = match read_full(file, buf, want, base, 0, Some(align)) {
            // A file system that took the flag but refuses the read itself.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                let _ = set_direct(file, false);
                let used = self.file.fall_back(ReadMode::Direct, os_message(&e));
                let flags = if used == ReadMode::DontCache {
                    libc::RWF_DONTCACHE
                } else {
                    0
                };
                read_full(file, buf, want, base, flags, None)?
            }
            other => other?,
        };
        if got < stop {
            return Err(self.file.ended_early());
        }
        // The file's last block is read whole: bytes past the length are beyond the end, a
        // read that stopped short of the block saw the end; one that filled it saw nothing.
        if self.ends_file(base + stop as u64) && (got > stop || got < want) {
            self.file.saw_end(got > stop);
        }
        self.pos = base + stop as u64;
        Ok(Bytes::contiguous(skew..stop))
    }

    /// Maps the next window; `None` when every guard slot is taken (the chunk is then read).
    fn map_next(&mut self) -> Result<Option<mmap::Window>, InputError> {
        let page = mmap::page_size() as u64;
        let base = self.pos - self.pos % page;
        let skew = (self.pos - base) as usize;
        let span = self.end.next_multiple_of(page) - base;
        let len = (self.chunk as u64).next_multiple_of(page).min(span) as usize;
        let stop = (self.end - base).min(len as u64) as usize;
        let window = match mmap::Window::map(self.file.file.local()?, base, len, skew..stop) {
            Ok(Some(window)) => window,
            Ok(None) => return Ok(None),
            // The file cannot be mapped (some special file systems): read it instead.
            Err(e) => {
                self.file.fall_back(ReadMode::Mmap, os_message(&e));
                return Ok(None);
            }
        };
        match window.populate() {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EFAULT) => return Err(InputError::Changed),
            Err(e) => return Err(e.into()),
        }
        self.pos = base + stop as u64;
        Ok(Some(window))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::buffer::{BUFFER_ALIGN, CACHE_LINE};
    use crate::source::file::{End, Input};
    use crate::source::target::Target;
    use std::collections::HashSet;
    use std::io::{self, Read};
    use std::path::Path;

    /// `data` in a file opened to be read with `mode`, as if its file system said it held
    /// `claimed` bytes.
    fn sized(dir: &Path, data: &[u8], claimed: u64, mode: ReadMode) -> SizedFile {
        let path = dir.join(format!("f{}-{claimed}-{mode:?}", data.len()));
        std::fs::write(&path, data).unwrap();
        let Input::Sized(mut file) = Input::open_with(&Target::Path(path), mode).unwrap() else {
            panic!("a regular file is sized");
        };
        file.stamp.len = claimed;
        file
    }

    /// Every byte of `0..file.len()` as the readers deliver them, `chunk` at a time.
    fn read_all(file: &SizedFile, chunk: usize) -> Vec<u8> {
        let mut reader = file.range_reader(0..file.len(), chunk);
        let (mut out, mut buffer) = (Vec::new(), Buffer::new());
        while !reader.is_done() {
            let chunk = reader.next_chunk(buffer).map_err(|(_, e)| e).unwrap();
            out.extend_from_slice(chunk.contiguous().unwrap());
            let (back, ok) = chunk.finish();
            ok.unwrap();
            buffer = back;
        }
        out
    }

    const MODES: [ReadMode; 4] = [
        ReadMode::Pread,
        ReadMode::Direct,
        ReadMode::DontCache,
        ReadMode::Mmap,
    ];

    #[test]
    fn bytes_past_the_reported_size_are_found_in_every_read_mode() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3 * 8192 + 100).map(|i| (i % 251) as u8).collect();
        for mode in MODES {
            for claimed in [1u64, 100, 4095, 4096, 4097, 8192, 3 * 8192 + 99] {
                for chunk in [4096, 8192, 1 << 20] {
                    let file = sized(dir.path(), &data, claimed, mode);
                    assert_eq!(read_all(&file, chunk), data[..claimed as usize]);
                    // What `check_unchanged` does before its stamp check, which this file
                    // fails (its real size is not the one claimed).
                    if file.end() == End::Unknown {
                        file.look_past_end().unwrap();
                    }
                    assert!(
                        matches!(
                            file.check_end(),
                            Err(InputError::SizeMisreported { size, more: true }) if size == claimed
                        ),
                        "{mode:?} {claimed} {chunk}"
                    );
                    // Read again as a stream, it gives every byte.
                    let mut all = Vec::new();
                    file.to_stream().unwrap().read_to_end(&mut all).unwrap();
                    assert_eq!(all, data, "{mode:?} {claimed} {chunk}");
                }
            }
        }
    }

    #[test]
    fn staggered_reads_start_on_different_lines_of_a_page_and_deliver_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3 * 8192 + 100).map(|i| (i % 251) as u8).collect();
        for mode in MODES {
            let file = sized(dir.path(), &data, data.len() as u64, mode);
            let mut starts = HashSet::new();
            for chunk in [4096, 8192, 1 << 20] {
                let mut reader = file.range_reader(0..file.len(), chunk).staggered();
                let mut out = Vec::new();
                // A fresh buffer per chunk, as a lane set's chunks each have their own.
                while !reader.is_done() {
                    let got = reader
                        .next_chunk(Buffer::new())
                        .map_err(|(_, e)| e)
                        .unwrap();
                    let bytes = got.contiguous().unwrap();
                    let start = bytes.as_ptr() as usize % BUFFER_ALIGN;
                    out.extend_from_slice(bytes);
                    got.finish().1.unwrap();
                    match file.read_mode() {
                        // The chunk starts on a block boundary of the file, so its start in
                        // memory is the page boundary: what `O_DIRECT` requires.
                        ReadMode::Direct => assert_eq!(start, 0, "{mode:?} {chunk}"),
                        ReadMode::Mmap => {}
                        ReadMode::Pread | ReadMode::DontCache => {
                            assert_eq!(start % CACHE_LINE, 0, "{mode:?} {chunk}");
                            starts.insert(start);
                        }
                    }
                }
                assert_eq!(out, data, "{mode:?} {chunk}");
            }
            // Twelve buffers made one after another: tests running beside this one may take
            // lines in between, but not so that all twelve start on the same one.
            if matches!(file.read_mode(), ReadMode::Pread | ReadMode::DontCache) {
                assert!(starts.len() > 1, "{mode:?}: {starts:?}");
            }
        }
    }

    /// Readers of ranges that follow one another, read together: each gets its own bytes in
    /// its own buffer, in every read mode and whether or not its range fits one chunk; the
    /// last sees the end of the file (or the bytes past a misreported size), and a file
    /// shorter than its size fails where its bytes run out.
    #[test]
    fn readers_that_follow_one_another_each_get_their_own_bytes() {
        let dir = tempfile::tempdir().unwrap();
        for len in [2usize, 3, 4097, 3 * 8192 + 100] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            // As the file system reports it: true, one byte short, ten bytes long.
            for claimed in [len as u64, len as u64 - 1, len as u64 + 10] {
                for mode in MODES {
                    for (pieces, chunk) in [(2, 1 << 20), (3, 1 << 20), (2, 4096)] {
                        let file = sized(dir.path(), &data, claimed, mode);
                        let cuts: Vec<u64> = (0..=pieces).map(|i| i * claimed / pieces).collect();
                        let mut readers: Vec<_> = cuts
                            .windows(2)
                            .map(|w| file.range_reader(w[0]..w[1], chunk).staggered())
                            .collect();
                        let buffers = (0..pieces).map(|_| Buffer::new()).collect();
                        let chunks = RangeReader::next_chunks(&mut readers, buffers);
                        let what = format!("{len} {claimed} {mode:?} {pieces} {chunk}");
                        for ((result, reader), w) in
                            chunks.into_iter().zip(&readers).zip(cuts.windows(2))
                        {
                            let (start, stop) = (w[0] as usize, w[1] as usize);
                            // Buffered reads are a chunk long; O_DIRECT and mapped windows
                            // end on a block or a page.
                            let reach = stop.min(start + chunk);
                            let exact = matches!(mode, ReadMode::Pread | ReadMode::DontCache);
                            match result {
                                Ok(got) => {
                                    let bytes = got
                                        .contiguous()
                                        .expect("a staggered chunk is side by side");
                                    let end = start + bytes.len();
                                    assert!(!exact || end == reach, "{what}");
                                    assert_eq!(reader.position(), end as u64, "{what}");
                                    // A mapped page holds zeros past the end; the stamp check
                                    // after hashing finds the file changed.
                                    if end <= len {
                                        assert!(bytes == &data[start..end], "{what}");
                                    } else {
                                        assert_eq!(mode, ReadMode::Mmap, "{what}");
                                    }
                                }
                                Err((_, InputError::Changed)) => assert!(reach > len, "{what}"),
                                Err((_, e)) => panic!("{e}: {what}"),
                            }
                        }
                        let last_fits = claimed - cuts[pieces as usize - 1] <= chunk as u64;
                        let buffered = matches!(mode, ReadMode::Pread | ReadMode::DontCache);
                        if buffered && last_fits && claimed < len as u64 {
                            assert_eq!(file.end(), End::Beyond, "{what}");
                        }
                        if buffered && last_fits && claimed == len as u64 {
                            assert_eq!(file.end(), End::Seen, "{what}");
                        }
                    }
                }
            }
        }
    }

    /// The bytes of `0..file.len()` as a reader spread in pieces of `piece` bytes delivers
    /// them, `chunk` at a time, checking where each chunk's pieces lie.
    fn read_spread(file: &SizedFile, chunk: usize, piece: usize) -> Result<Vec<u8>, InputError> {
        let piece_size = NonZeroUsize::new(piece).unwrap();
        let mut reader = file.range_reader(0..file.len(), chunk).spread(piece_size);
        let (mut out, mut buffer) = (Vec::new(), Buffer::new());
        while !reader.is_done() {
            let got = reader.next_chunk(buffer).map_err(|(_, e)| e)?;
            let pieces = got.pieces();
            let count = pieces.iter().count();
            let mode = file.read_mode();
            let spread = match mode {
                ReadMode::Pread | ReadMode::DontCache => (2..=IOV_MAX).contains(&count),
                ReadMode::Direct => false,
                // A window is side by side; a chunk read because every guard slot was taken
                // (by tests running beside this one) is a buffered read, spread.
                ReadMode::Mmap => pieces.stride() != pieces.piece_len(),
            };
            if spread {
                // A line more than the piece, rounded up to a line: successive lines.
                let stride = piece.next_multiple_of(64) + 64;
                assert_eq!((pieces.piece_len(), pieces.stride()), (piece, stride));
                assert!(got.contiguous().is_none(), "{mode:?} {chunk} {piece}");
                let base = pieces.span().as_ptr() as usize;
                for (i, p) in pieces.iter().enumerate() {
                    assert_eq!(p.as_ptr() as usize - base, i * stride, "{mode:?} {i}");
                    assert!(p.len() == piece || i == count - 1 && p.len() < piece);
                }
                assert_eq!(pieces.whole(), got.len() / piece);
            } else {
                assert!(count <= 1, "{mode:?} {chunk} {piece}: {count} pieces");
                assert!(got.contiguous().is_some());
            }
            assert_eq!(pieces.iter().map(<[u8]>::len).sum::<usize>(), got.len());
            for p in pieces.iter() {
                out.extend_from_slice(p);
            }
            let (back, ok) = got.finish();
            ok?;
            buffer = back;
        }
        Ok(out)
    }

    #[test]
    fn spread_reads_deliver_the_bytes_in_pieces_a_line_further_apart_than_their_length() {
        let dir = tempfile::tempdir().unwrap();
        for mode in MODES {
            for piece in [64usize, 1000, 4096] {
                // Chunks of 1, 2 and 5 pieces; files of a piece or less, a last piece shorter
                // than the others, and a last chunk at the file's end, shorter or whole.
                for per_chunk in [1, 2, 5] {
                    let chunk = per_chunk * piece;
                    let lens = [
                        1,
                        piece - 1,
                        piece,
                        piece + 1,
                        chunk - 1,
                        chunk,
                        chunk + 1,
                        2 * chunk + piece / 2,
                        3 * chunk,
                    ];
                    for len in lens {
                        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
                        let file = sized(dir.path(), &data, len as u64, mode);
                        let got = read_spread(&file, chunk, piece).unwrap();
                        assert!(got == data, "{mode:?} {piece} {chunk} {len}");
                        // The last read asked for a byte more, and found none.
                        if matches!(file.read_mode(), ReadMode::Pread | ReadMode::DontCache) {
                            assert_eq!(file.end(), End::Seen, "{mode:?} {piece} {chunk} {len}");
                        }
                        file.check_unchanged().unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn spread_reads_find_bytes_past_the_size_and_a_file_that_ends_early() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..5 * 4096 + 100).map(|i| (i % 251) as u8).collect();
        for mode in MODES {
            // More bytes than claimed: the last read's extra byte, after the last piece.
            for claimed in [4096u64, 4097, 3 * 4096, 5 * 4096 - 1] {
                let file = sized(dir.path(), &data, claimed, mode);
                let got = read_spread(&file, 4 * 4096, 4096).unwrap();
                assert_eq!(got, data[..claimed as usize], "{mode:?} {claimed}");
                if file.end() == End::Unknown {
                    file.look_past_end().unwrap();
                }
                assert!(
                    matches!(
                        file.check_end(),
                        Err(InputError::SizeMisreported { more: true, .. })
                    ),
                    "{mode:?} {claimed}"
                );
            }
            // Fewer: a read that ends early. (The file's real size is not the stamp's here,
            // so it reads as changed.)
            let claimed = data.len() as u64 + 5000;
            let file = sized(dir.path(), &data, claimed, mode);
            assert!(
                matches!(read_spread(&file, 4 * 4096, 4096), Err(InputError::Changed)),
                "{mode:?}"
            );
        }
    }

    #[test]
    fn a_chunk_of_more_pieces_than_a_vectored_read_takes_is_read_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(IOV_MAX + 1) * 64 * 2)
            .map(|i| (i % 251) as u8)
            .collect();
        for mode in [ReadMode::Pread, ReadMode::DontCache] {
            let file = sized(dir.path(), &data, data.len() as u64, mode);
            // `read_spread` checks that chunks of more than `IOV_MAX` pieces are one.
            for chunk in [IOV_MAX * 64, (IOV_MAX + 1) * 64] {
                assert_eq!(read_spread(&file, chunk, 64).unwrap(), data, "{mode:?}");
            }
        }
    }

    #[test]
    fn the_last_read_sees_the_end_of_a_file_read_through_the_cache_at_no_extra_cost() {
        let dir = tempfile::tempdir().unwrap();
        for len in [1usize, 4095, 4096, 4097, 8192, 3 * 8192 + 100] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            for mode in MODES {
                for chunk in [4096, 8192, 1 << 20] {
                    let file = sized(dir.path(), &data, len as u64, mode);
                    assert_eq!(read_all(&file, chunk), data);
                    // The reads themselves looked past the end, so `check_unchanged` needs
                    // no read of its own (mmap has no such read; O_DIRECT not on a block
                    // boundary).
                    let seen = match file.read_mode() {
                        ReadMode::Pread | ReadMode::DontCache => true,
                        ReadMode::Direct => !(len as u64).is_multiple_of(file.align),
                        ReadMode::Mmap => false,
                    };
                    assert_eq!(file.end() == End::Seen, seen, "{mode:?} {len} {chunk}");
                    file.check_unchanged().unwrap();
                    assert_eq!(file.end(), End::Seen);
                }
            }
        }
    }

    #[test]
    fn a_file_that_grows_while_read_is_changed_not_longer_than_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let data = vec![7u8; 10_000];
        for mode in MODES {
            let file = sized(dir.path(), &data, data.len() as u64, mode);
            let path = dir.path().join(format!("f10000-10000-{mode:?}"));
            let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
            let mut appender = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            io::Write::write_all(&mut appender, b"more").unwrap();
            appender.set_modified(mtime).unwrap();
            assert_eq!(read_all(&file, 4096), data);
            assert!(
                matches!(file.check_unchanged(), Err(InputError::Changed)),
                "{mode:?}"
            );
        }
    }

    /// A file read from an offset (standard input after something read from it) gives its
    /// bytes from there in every read mode, from offsets on and off blocks and pages, sees
    /// its end, and reads as a stream from there too.
    #[test]
    fn a_file_read_from_an_offset_gives_its_bytes_from_there_in_every_read_mode() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3 * 8192 + 100).map(|i| (i % 251) as u8).collect();
        for start in [1, 4095, 4096, 5000, data.len() - 1, data.len()] {
            for mode in MODES {
                for chunk in [4096, 8192, 1 << 20] {
                    let what = format!("{start} {mode:?} {chunk}");
                    let mut file = sized(dir.path(), &data, data.len() as u64, mode);
                    file.start = start as u64;
                    assert_eq!(file.len(), (data.len() - start) as u64, "{what}");
                    assert!(read_all(&file, chunk) == data[start..], "{what}");
                    file.check_unchanged().unwrap();
                    assert_eq!(file.end(), End::Seen, "{what}");
                    let mut reader = file.range_reader(0..file.len(), chunk);
                    while !reader.is_done() {
                        let got = reader.next_chunk(Buffer::new()).map_err(|(_, e)| e);
                        got.unwrap().finish().1.unwrap();
                    }
                    assert_eq!(reader.position(), file.len(), "{what}");
                    // Not on a file with `O_DIRECT` on, which refuses reads off its blocks.
                    if file.read_mode() != ReadMode::Direct {
                        let mut head = vec![0; file.len().min(10) as usize];
                        file.read_exact_at(&mut head, 0).unwrap();
                        assert!(head == data[start..start + head.len()], "{what}");
                    }
                    let mut streamed = Vec::new();
                    file.to_stream()
                        .unwrap()
                        .read_to_end(&mut streamed)
                        .unwrap();
                    assert!(streamed == data[start..], "{what}");
                }
            }
        }
    }
}
