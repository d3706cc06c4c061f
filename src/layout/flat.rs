//! The flat shape: one level of part digests under one more hash, `H(H(part 1) ‖ … ‖ H(part
//! N))` over the raw digest bytes. S3's multipart ETag (MD5) and composite checksums (CRC32,
//! CRC32C, SHA-1, SHA-256) and Dropbox's `content_hash` (SHA-256 of 4 MiB blocks) are this
//! shape; they differ in the part size and in what S3 does for a single part.
//!
//! Every part is a job, and a job is one message, so parts are hashed several at once in the
//! multi-buffer lanes when they are in flight together. The combiner feeds the part digests,
//! in order, to the outer hasher as they arrive: its memory does not grow with the file.

use std::ops::Range;

use super::{JobKind, PartList, Root};
use crate::algorithm::{Algorithm, Digest, Hasher};

/// Parameters of the flat shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Flat {
    /// Where the parts end.
    pub cut: Cut,
    /// S3: a stream shorter than one part was a single upload, whose value is the part's own
    /// digest (the plain digest); an empty stream is one empty part. A stream of exactly one
    /// part was a multipart upload of one part, `H(H(part))-1`: the AWS CLI's threshold is
    /// inclusive (a file of its 8 MiB chunk size is uploaded in parts). Otherwise (Dropbox)
    /// the outer hash is always taken, over no part at all for an empty stream.
    pub single_part_is_plain: bool,
    /// S3: a multipart value is followed by `-N`, its part count.
    pub count_suffix: bool,
}

/// How a stream is cut into parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cut {
    /// Parts of this many bytes, the last one shorter: every client's way.
    Every(u64),
    /// Parts of the listed sizes in turn, the bytes past them one more part: an upload
    /// whose parts differ in size.
    Listed(PartList),
}

impl Cut {
    /// The size of part `index` (from 0): past a list, the rest of the stream.
    fn size(self, index: u64) -> u64 {
        match self {
            Cut::Every(part) => part,
            Cut::Listed(list) => list.size_of(index).unwrap_or(u64::MAX),
        }
    }

    /// The first part's size: a shorter stream was a single upload.
    fn first(self) -> u64 {
        match self {
            Cut::Every(part) => part,
            Cut::Listed(list) => list.first(),
        }
    }

    /// The parts of a stream of `n` bytes, in order; none for an empty one.
    fn ranges(self, n: u64) -> Vec<Range<u64>> {
        let sizes: Box<dyn Iterator<Item = u64>> = match self {
            Cut::Every(part) => Box::new(std::iter::repeat(part)),
            Cut::Listed(list) => Box::new(list.sizes().chain(std::iter::once(u64::MAX))),
        };
        let mut start = 0u64;
        sizes
            .map_while(|size| {
                let range = start..n.min(start.saturating_add(size));
                start = range.end;
                (!range.is_empty()).then_some(range)
            })
            .collect()
    }

    /// The number of parts of a stream of `n` bytes: [`Cut::ranges`], counted.
    fn count(self, n: u64) -> u64 {
        match self {
            Cut::Every(part) => n.div_ceil(part),
            Cut::Listed(list) => {
                let mut left = n;
                let mut count = 0;
                for size in list.sizes() {
                    if left == 0 {
                        break;
                    }
                    left = left.saturating_sub(size);
                    count += 1;
                }
                count + u64::from(left > 0)
            }
        }
    }
}

impl Flat {
    /// The number of parts of a stream of `n` bytes.
    pub fn parts(&self, n: u64) -> u64 {
        match self.cut.count(n) {
            0 if self.single_part_is_plain => 1,
            parts => parts,
        }
    }

    /// The jobs of a stream of `n` bytes: its parts, each one message.
    pub fn plan(&self, n: u64) -> Vec<(Range<u64>, JobKind)> {
        let mut parts = self.cut.ranges(n);
        if parts.is_empty() && self.single_part_is_plain {
            parts.push(0..0);
        }
        parts.into_iter().map(|r| (r, JobKind::Part)).collect()
    }

    /// A hasher for a whole stream of parts (one of unknown length), which it cuts itself.
    pub fn job_hasher(self, alg: Algorithm) -> PartRun {
        PartRun {
            shape: self,
            alg,
            current: alg.bulk_hasher(),
            filled: 0,
            outer: Outer::new(self, alg),
        }
    }
}

impl Flat {
    /// The part count that follows the value of a stream of `n` bytes: none for a shape
    /// without counts, nor for S3's single upload.
    pub fn count(&self, n: u64) -> Option<u64> {
        (self.count_suffix && !self.is_single_upload(n)).then_some(self.parts(n))
    }

    /// Whether a stream of `n` bytes was a single upload: shorter than one part.
    fn is_single_upload(&self, n: u64) -> bool {
        self.single_part_is_plain && n < self.cut.first()
    }

    /// Whether `expected` is the value of the same one part of bytes as `root`, uploaded the
    /// other way: S3 clients choose between a single upload (`H(part)`) and a multipart upload
    /// of one part (`H(H(part))-1`). The AWS CLI uploads a file of exactly its threshold (8
    /// MiB) in one part, as multipart; other clients (rclone, below its 200 MiB cutoff) upload
    /// a file of any size up to their cutoff in one request.
    pub fn same_part_other_upload(&self, alg: Algorithm, root: &Root, expected: &Root) -> bool {
        if !self.single_part_is_plain {
            return false;
        }
        let single = match (root.parts(), root.single_part()) {
            (None, _) => *root.digest(),
            (Some(1), Some(single)) => *single,
            _ => return false,
        };
        let multipart = Root::new(alg.hash(single.as_bytes())).with_parts(1);
        // A record that kept the bare digest of a single upload reads back with the count of
        // today's rule ([`super::Layout::value_of`]): the part's digest followed by `-1`.
        let bare = Root::new(single).with_parts(1);
        *expected == single || *expected == multipart || *expected == bare
    }
}

/// Hashes a whole stream of many parts fed as chunks, whose digest is then the root's
/// ([`Outer::push`] knows it by its length); or a stream of one part, whose digest is the
/// part's. The parts of a file are jobs of their own ([`JobKind::Part`]), each one message.
#[derive(Clone)]
pub(super) struct PartRun {
    shape: Flat,
    alg: Algorithm,
    current: Hasher,
    /// Bytes in `current`.
    filled: u64,
    /// The parts finished before `current`.
    outer: Outer,
}

impl PartRun {
    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let part = self.shape.cut.size(self.outer.parts);
            if self.filled == part {
                self.finish_part();
                continue;
            }
            let take = (part - self.filled).min(data.len() as u64) as usize;
            self.current.update(&data[..take]);
            self.filled += take as u64;
            data = &data[take..];
        }
    }

    fn finish_part(&mut self) {
        let part = std::mem::replace(&mut self.current, self.alg.bulk_hasher());
        self.outer.add_part(part.finalize());
        self.filled = 0;
    }

    /// The digest of the one part fed, or with more parts the outer digest over them all.
    pub fn finalize(mut self) -> Digest {
        if self.outer.parts == 0 {
            return self.current.finalize();
        }
        if self.filled > 0 {
            self.finish_part();
        }
        self.outer.hasher.finalize()
    }
}

/// The outer hash over the part digests, fed in order.
#[derive(Clone)]
pub(super) struct Outer {
    shape: Flat,
    hasher: Hasher,
    parts: u64,
    /// The digest of the only part so far.
    single: Option<Digest>,
    /// Bytes of the parts pushed so far.
    bytes: u64,
    /// A job that covered many parts (a whole stream): its digest and part count.
    whole: Option<(Digest, u64)>,
}

impl Outer {
    pub fn new(shape: Flat, alg: Algorithm) -> Outer {
        Outer {
            shape,
            hasher: alg.hasher(),
            parts: 0,
            single: None,
            bytes: 0,
            whole: None,
        }
    }

    fn add_part(&mut self, digest: Digest) {
        self.hasher.update(digest.as_bytes());
        self.single = (self.parts == 0).then_some(digest);
        self.parts += 1;
    }

    /// Takes the digest of the next job, which covers `range`: a part (an empty one only for
    /// the empty stream), or a whole stream of many parts hashed by one [`PartRun`], which
    /// starts where the first part does and runs past its end.
    pub fn push(&mut self, range: Range<u64>, digest: Digest) {
        let len = range.end - range.start;
        self.bytes += len;
        let parts = match range.start {
            0 => self.shape.parts(len),
            _ => 1,
        };
        match parts {
            0 => {}
            1 => self.add_part(digest),
            parts => self.whole = Some((digest, parts)),
        }
    }

    pub fn finish(self) -> Root {
        let shape = self.shape;
        let (digest, parts) = match (self.whole, self.single) {
            (Some((digest, parts)), _) => (digest, parts),
            (None, Some(one)) if shape.is_single_upload(self.bytes) => return Root::new(one),
            (None, Some(one)) if shape.single_part_is_plain && self.parts == 1 => {
                let root = Root::new(self.hasher.finalize()).with_parts(1);
                return root.with_single_part(one);
            }
            (None, _) => (self.hasher.finalize(), self.parts),
        };
        let root = Root::new(digest);
        match shape.count_suffix {
            true => root.with_parts(parts),
            false => root,
        }
    }
}
