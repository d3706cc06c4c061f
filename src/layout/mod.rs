//! Layouts: how a byte stream of length `n` is cut into leaves and how leaf digests combine
//! into one root.
//!
//! A layout is a pure function of `n` and its parameters, which is what lets the engine hash
//! leaves on any thread in any order. The engine drives every layout through one small
//! contract and knows no layout by name:
//!
//! 1. [`Layout::plan`] cuts a stream of `n` bytes into independent jobs (byte ranges, and how
//!    each starts: [`JobKind`]);
//! 2. [`JobHasher`] hashes one job fed as a stream of chunks;
//! 3. [`Combiner`] folds the job digests, arriving in any order, into the [`Root`], which
//!    prints itself as the system it imitates shows it (hex, base64, S3's `-N`).
//!
//! A job digest is always a node of the layout's tree (a leaf, a complete aligned subtree, a
//! part) and the combiner takes job digests by position, whoever hashed them and in whatever
//! order: ranges of jobs can be hashed apart (on other machines) and combined later. Folding
//! such a range into fewer nodes ahead of the combiner must keep to the tree's nodes (aligned
//! power-of-two runs for the fixed shapes).
//!
//! Layouts are few *shapes* with parameters, each a module:
//! - `halving`: `mtsum` (C++ mtsum 1.1.0);
//! - `plain`: the ordinary digest of the whole stream, joined from pieces where the
//!   algorithm allows (BLAKE3 subtrees, CRC combine: the full-object CRCs of S3 and GCS);
//! - `fixed`: fixed leaves under a binary tree: `merkle`, `rfc6962`, and Glacier's tree
//!   hash (`glacier`);
//! - `padded`: the fixed shape padded to a power of two of leaves: BitTorrent v2
//!   (`btv2`);
//! - `flat`: one level of part digests under one more hash: S3's multipart ETag and
//!   composite checksums (`s3`), Dropbox's `content_hash` (`dropbox`).
//!
//! A storage system is one small module naming its shape and parameters, a variant of
//! [`Layout`] and a row in the tables below. [`Layout::walk`] is the definition of the binary
//! shapes itself (a recursion over byte ranges); the DOT graph and the `mtsum` combiner are
//! built on it.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use crate::algorithm::{Algorithm, Digest, Hasher};
use crate::dialect::{Dialect, Setting, Worded};
use crate::lanes::Kernel;
use crate::source::Pieces;

mod btv2;
mod dropbox;
mod fixed;
mod flat;
mod glacier;
mod halving;
mod padded;
mod plain;
mod root;
mod s3;

pub use crate::size::{LeafSize, LeafSizeError};
pub use crate::source::NoRoot;
use fixed::{Fixed, LeafRun, Stack, Top};
use flat::{Cut, Flat, Outer, PartRun};
pub use halving::MAX_LEAF as MTSUM_MAX_LEAF;
pub use root::{Encoding, Root};
pub use s3::{PartList, PartSize};

/// Roughly how many bytes one job of a fixed-leaf layout covers: large enough that the
/// per-job overhead (a channel message, a few syscalls) vanishes, small enough that two
/// workers share a file of a few MiB.
/// It is also the length of the pieces a plain stream of a tree algorithm or a CRC is cut
/// into, which must be a power of two of BLAKE3's 1 KiB chunks.
const TARGET_JOB_BYTES: u64 = 4 << 20;
const _: () = assert!(TARGET_JOB_BYTES.is_power_of_two() && TARGET_JOB_BYTES >= 1024);

/// The fewest whole leaves in one chunk worth hashing in lanes: with fewer, most of MD5's
/// lanes idle and one stream of OpenSSL (about a sixth of the lanes' throughput) is as fast.
const MIN_LANE_LEAVES: u64 = 4;

/// A stream of `n` bytes cut into the subtrees of a tree algorithm's own tree
/// ([`Algorithm::is_tree`]) that start every `size` bytes, a power of two of BLAKE3's 1 KiB
/// chunks: jobs whose digests are the subtrees' chaining values, which
/// [`join_subtrees`] joins into the plain digest of the stream. An audit's outboard leaves.
pub fn subtree_jobs(n: u64, size: LeafSize) -> Vec<(Range<u64>, JobKind)> {
    plain::subtrees(n, size.get())
}

/// The plain digest (`is_root`) or chaining value of consecutive subtrees of a tree
/// algorithm's own tree, in order, all of one power-of-two length but the last, which may be
/// shorter: the digests of [`subtree_jobs`], or of the pieces of [`Layout::plan`]. Two or more
/// for a root: one subtree's chaining value is not the digest of its bytes.
pub fn join_subtrees(alg: Algorithm, subtrees: &[Digest], is_root: bool) -> Digest {
    plain::join_subtrees(alg, subtrees, is_root)
}

/// A layout together with its parameters: the validated value the program sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// C++ mtsum 1.1.0: ranges halved until they are at most 128 MiB; prefix byte 0 for a
    /// leaf, 1 for an inner node, 2 for the root; the root always has two children.
    Mtsum,
    /// The ordinary digest of the whole stream, as `sha256sum` prints it.
    Plain,
    /// Fixed leaves, no prefixes, the left subtree takes the largest power of two of leaves
    /// strictly less than their count; `H("")` for empty input.
    Merkle(LeafSize),
    /// RFC 6962 (Certificate Transparency) Merkle Tree Hash over fixed leaves: leaf
    /// `H(0x00 || segment)`, node `H(0x01 || left || right)`, `H("")` for empty input.
    Rfc6962(LeafSize),
    /// Amazon S3's multipart ETag (MD5) and composite checksums (CRC32, CRC32C, SHA-1,
    /// SHA-256) of an upload in parts of the given size: see `s3`.
    S3(PartSize),
    /// The same values of an upload whose parts differ in size, cut where the listed parts
    /// end (see [`PartList`]); named `s3` as [`Layout::S3`] is.
    S3Parts(PartList),
    /// Amazon Glacier's SHA-256 tree hash over 1 MiB chunks: see `glacier`.
    Glacier,
    /// Dropbox's `content_hash`, SHA-256 over the SHA-256s of 4 MiB blocks: see `dropbox`.
    Dropbox,
    /// BitTorrent v2's `pieces root` (BEP 52), a SHA-256 tree over 16 KiB blocks padded to a
    /// power of two: see `btv2`.
    Btv2,
}

/// The shape of a layout's tree with its parameters: what the contract is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Whole,
    Halving,
    Fixed(Fixed),
    Flat(Flat),
}

/// Every layout's name, as `-t` takes it, in the order help texts list them.
pub const NAMES: [&str; 8] = [
    "mtsum", "plain", "merkle", "rfc6962", "s3", "glacier", "dropbox", "btv2",
];

impl Layout {
    /// The layout's name as `-t` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Mtsum => "mtsum",
            Layout::Plain => "plain",
            Layout::Merkle(_) => "merkle",
            Layout::Rfc6962(_) => "rfc6962",
            Layout::S3(_) | Layout::S3Parts(_) => "s3",
            Layout::Glacier => "glacier",
            Layout::Dropbox => "dropbox",
            Layout::Btv2 => "btv2",
        }
    }

    /// Builds a layout from its `-t` name and an optional size: the leaf size of `merkle`
    /// and `rfc6962` (`-l`), the part size of `s3` (`--part-size`).
    pub fn from_name(name: &str, size: Option<LeafSize>) -> Result<Layout, LayoutError> {
        let layout = match name.to_ascii_lowercase().as_str() {
            "mtsum" => Layout::Mtsum,
            "plain" => Layout::Plain,
            "merkle" => Layout::Merkle(size.unwrap_or_default()),
            "rfc6962" => Layout::Rfc6962(size.unwrap_or_default()),
            "s3" => Layout::S3(size.map_or(Ok(PartSize::DEFAULT), PartSize::try_from)?),
            "glacier" => Layout::Glacier,
            "dropbox" => Layout::Dropbox,
            "btv2" => Layout::Btv2,
            _ => return Err(LayoutError::Unknown(name.into())),
        };
        if size.is_some() && layout.size_parameter().is_none() {
            return Err(LayoutError::NoLeafSize(layout.name()));
        }
        Ok(layout)
    }

    /// The size chosen with the layout (`-l`, `--part-size`), written in tags and names.
    pub fn size_parameter(self) -> Option<LeafSize> {
        match self {
            Layout::Merkle(l) | Layout::Rfc6962(l) => Some(l),
            Layout::S3(part) => Some(part.into()),
            _ => None,
        }
    }

    fn shape(self) -> Shape {
        match self {
            Layout::Mtsum => Shape::Halving,
            Layout::Plain => Shape::Whole,
            Layout::Merkle(leaf) => Shape::Fixed(Fixed {
                leaf: leaf.get(),
                leaf_prefix: &[],
                node_prefix: &[],
                top: Top::Unbalanced,
            }),
            Layout::Rfc6962(leaf) => Shape::Fixed(Fixed {
                leaf: leaf.get(),
                leaf_prefix: &[0],
                node_prefix: &[1],
                top: Top::Unbalanced,
            }),
            Layout::S3(part) => Shape::Flat(s3::shape(part)),
            Layout::S3Parts(parts) => Shape::Flat(s3::listed_shape(parts)),
            Layout::Glacier => Shape::Fixed(glacier::SHAPE),
            Layout::Dropbox => Shape::Flat(dropbox::SHAPE),
            Layout::Btv2 => Shape::Fixed(btv2::SHAPE),
        }
    }

    /// The algorithms a layout is defined with: the storage systems fix theirs, and a CRC
    /// is not a hash to build a tree of (it is linear: a node would say nothing its leaves'
    /// CRC does not). Checked where a layout meets an algorithm (the command line, a tag).
    pub fn check_algorithm(self, alg: Algorithm) -> Result<(), LayoutError> {
        match self {
            Layout::Plain => Ok(()),
            Layout::S3(_) | Layout::S3Parts(_) => s3::check_algorithm(alg),
            _ if alg.is_crc() => Err(LayoutError::CrcInTree {
                layout: self.name(),
                alg,
            }),
            Layout::Mtsum | Layout::Merkle(_) | Layout::Rfc6962(_) => Ok(()),
            Layout::Glacier | Layout::Dropbox | Layout::Btv2 if alg == Algorithm::Sha256 => Ok(()),
            Layout::Glacier | Layout::Dropbox | Layout::Btv2 => Err(LayoutError::Algorithm {
                layout: self.name(),
                alg,
                allowed: "sha256",
            }),
        }
    }

    /// The algorithm to use when none is asked for: the one a storage system reports
    /// (`s3`: the ETag's MD5), SHA-256 otherwise.
    pub fn default_algorithm(self) -> Algorithm {
        match self {
            Layout::S3(_) | Layout::S3Parts(_) => Algorithm::Md5,
            _ => Algorithm::Sha256,
        }
    }

    /// How the root is spelled by default, as the system the layout imitates shows it.
    pub fn encoding(self, alg: Algorithm) -> Encoding {
        match self {
            Layout::S3(_) | Layout::S3Parts(_) => s3::encoding(alg),
            _ => Encoding::Hex,
        }
    }

    /// Whether a stream of `n` bytes has a root: S3 takes at most 10 000 parts, and
    /// BitTorrent v2 has none for an empty file. Files are checked before they are hashed;
    /// streams, whose length comes last, when they are combined.
    pub fn check_size(self, n: u64) -> Result<(), NoRoot> {
        match self {
            Layout::S3(part) => part.check(n),
            Layout::Btv2 if n == 0 => Err(NoRoot::EmptyFile(self.name())),
            _ => Ok(()),
        }
    }

    /// Whether `expected` is the value of the bytes whose value under this layout is `root`:
    /// the same value, or for S3 a single upload's value met as the multipart upload of one
    /// part that some clients make of it (`H(H(data))-1`, the AWS CLI's for a file of exactly
    /// its 8 MiB threshold). The encoding does not matter.
    pub fn matches(self, alg: Algorithm, root: &Root, expected: &Root) -> bool {
        if root == expected {
            return true;
        }
        match self.shape() {
            Shape::Flat(f) => f.same_part_other_upload(alg, root, expected),
            _ => false,
        }
    }

    /// The value this layout gives a stream of `n` bytes whose root digest is `digest`: the
    /// digest in the layout's encoding, followed for S3's multipart values by the part count,
    /// which the size and the part size determine. How a record kept as a bare digest (as
    /// mtsum before 1.x kept them all) is read back as the value it stands for.
    pub fn value_of(self, alg: Algorithm, n: u64, digest: Digest) -> Root {
        let root = Root::new(digest).with_encoding(self.encoding(alg));
        match self.shape() {
            Shape::Flat(f) => match f.count(n) {
                Some(parts) => root.with_parts(parts),
                None => root,
            },
            _ => root,
        }
    }

    /// The same layout with the other sizes worth trying for a stream of `n` bytes whose value
    /// `value` was computed with a size nobody wrote down (`-c --part-size auto`): for S3, the
    /// part sizes of common clients and those that give `value`'s part count
    /// ([`PartSize::candidates`]; one size for a value of one part, whose value no size of at
    /// least the file's changes). Empty for layouts whose size is always known.
    pub fn size_guesses(self, n: u64, value: &Root) -> Vec<Layout> {
        match self {
            Layout::S3(_) => PartSize::candidates(n, value.parts())
                .into_iter()
                .map(Layout::S3)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The size of the leaves (blocks, parts) of the layouts whose leaves all have one
    /// size but the last: those where a long stream is many jobs of whole leaves. Not the
    /// listed parts of [`Layout::S3Parts`], each a job of its own.
    pub fn leaf_size(self) -> Option<LeafSize> {
        let bytes = match self.shape() {
            Shape::Fixed(f) => f.leaf,
            Shape::Flat(f) => match f.cut {
                Cut::Every(part) => part,
                Cut::Listed(_) => return None,
            },
            Shape::Whole | Shape::Halving => return None,
        };
        LeafSize::new(bytes)
    }

    /// Whether the tree can only be planned once the total length is known. Such layouts
    /// cannot hash a pipe without storing it first.
    pub fn needs_length(self) -> bool {
        self.shape() == Shape::Halving
    }

    /// Whether the tree is binary over leaves of the stream's bytes, which
    /// [`Layout::walk`] visits (and `-g` draws): not the flat shape, whose root has one child
    /// per part, nor the padded one, whose leaves run past the stream's end.
    pub fn is_binary_tree(self) -> bool {
        match self.shape() {
            Shape::Whole | Shape::Halving => true,
            Shape::Fixed(f) => f.top == Top::Unbalanced,
            Shape::Flat(_) => false,
        }
    }

    /// The bytes hashed before a leaf's data.
    fn leaf_prefix(self) -> &'static [u8] {
        match self.shape() {
            Shape::Halving => halving::LEAF_PREFIX,
            Shape::Fixed(f) => f.leaf_prefix,
            Shape::Whole | Shape::Flat(_) => &[],
        }
    }

    /// A hasher for one leaf, already fed with the leaf's prefix byte.
    pub fn leaf_hasher(self, alg: Algorithm) -> Hasher {
        let leaf = self.leaf_size().map_or(u64::MAX, LeafSize::get);
        fixed::leaf_hasher(alg, leaf, self.leaf_prefix())
    }

    /// The bytes before the data of a job of `len` bytes (from [`Layout::plan`]) if the
    /// job is a single message, digested as it is: a leaf of `mtsum`, a whole `plain` stream,
    /// a part of the flat layouts, a job of the fixed-leaf layouts no longer than one leaf.
    /// Such jobs can be hashed side by side in SIMD lanes.
    pub fn message_prefix(self, len: u64) -> Option<&'static [u8]> {
        match self.leaf_size() {
            Some(leaf) if len > leaf.get() => None,
            _ => Some(self.leaf_prefix()),
        }
    }

    /// The digest of a leaf holding `data`.
    pub fn hash_leaf(self, alg: Algorithm, data: &[u8]) -> Digest {
        let mut h = self.leaf_hasher(alg);
        h.update(data);
        h.finalize()
    }

    /// The digest of an inner node (or of the root, where the layout tells them apart).
    ///
    /// # Panics
    /// For the layouts without binary inner nodes: `plain` and the flat ones.
    pub fn hash_node(self, alg: Algorithm, left: &Digest, right: &Digest, is_root: bool) -> Digest {
        match self.shape() {
            Shape::Halving => halving::node(alg, left, right, is_root),
            Shape::Fixed(f) => f.node(alg, left, right),
            Shape::Whole | Shape::Flat(_) => {
                unreachable!("the {self} layout has no binary inner nodes")
            }
        }
    }

    /// Walks the tree of a stream of `n` bytes by its definition, bottom-up and left to right,
    /// calling `builder` for every node. Returns `None` only for the fixed-leaf layouts on
    /// empty input, whose tree has no node at all.
    ///
    /// # Panics
    /// For the layouts that are not binary trees over the stream's bytes
    /// ([`Layout::is_binary_tree`]).
    pub fn walk<B: TreeBuilder>(self, n: u64, builder: &mut B) -> Option<B::Node> {
        assert!(
            self.is_binary_tree(),
            "the {self} layout is not a binary tree"
        );
        match self.shape() {
            Shape::Whole => Some(builder.leaf(0, 0..n)),
            Shape::Halving => Some(halving::walk(0, n, true, &mut 0, builder)),
            Shape::Fixed(f) => {
                let count = n.div_ceil(f.leaf);
                (count > 0).then(|| f.walk(0..count, n, builder))
            }
            Shape::Flat(_) => unreachable!("refused above"),
        }
    }

    /// The root digest of a stream whose leaves have the given digests (in order).
    ///
    /// # Panics
    /// If `leaves` does not hold exactly one digest per leaf of [`Layout::walk`], or where
    /// that panics.
    pub fn root_from_leaves(self, alg: Algorithm, n: u64, leaves: &[Digest]) -> Digest {
        let mut fold = Fold {
            layout: self,
            alg,
            leaf: |i: usize, _: Range<u64>| leaves[i],
        };
        self.walk(n, &mut fold).unwrap_or_else(|| alg.hash(b""))
    }

    /// The root of a fixed-leaf layout over leaves whose digests are given, whatever the
    /// leaves' lengths: the shape of `merkle` and `rfc6962` depends only on the leaf count.
    /// This is the tree-combining function of RFC 6962 itself (its leaves vary in length).
    ///
    /// # Panics
    /// For the layouts without fixed leaves in a binary tree.
    pub fn root_of_leaf_digests(self, alg: Algorithm, leaves: &[Digest]) -> Digest {
        let leaf = self.leaf_size().expect("a fixed-leaf layout").get();
        self.root_from_leaves(alg, leaves.len() as u64 * leaf, leaves)
    }

    /// Cuts a stream of `n` bytes into jobs that can be hashed independently: the leaves of
    /// `mtsum`, the whole stream for `plain`, the parts of the flat layouts, and aligned runs
    /// of a power-of-two number of leaves (complete subtrees) for the fixed-leaf layouts.
    /// With `one_leaf_per_job` every job of a fixed-leaf layout is exactly one leaf, so that
    /// the job digests are the leaf digests (for drawing the tree).
    pub fn jobs(self, n: u64, one_leaf_per_job: bool) -> Vec<Range<u64>> {
        // An algorithm whose plain digest is one job: the shape alone decides.
        self.plan(Algorithm::Sha256, n, one_leaf_per_job)
            .into_iter()
            .map(|(r, _)| r)
            .collect()
    }

    /// The jobs of a stream of `n` bytes as the engine hashes them, with how each is hashed:
    /// those of [`Layout::jobs`], except that a `plain` stream of an algorithm whose digest
    /// joins from pieces (BLAKE3's subtrees, a CRC) is cut into pieces, so that every worker
    /// hashes one, unless `one_leaf_per_job`; [`Combiner`] joins them into the plain digest.
    pub fn plan(
        self,
        alg: Algorithm,
        n: u64,
        one_leaf_per_job: bool,
    ) -> Vec<(Range<u64>, JobKind)> {
        match self.shape() {
            Shape::Whole => plain::plan(alg, n, one_leaf_per_job),
            Shape::Halving => halving::plan(n),
            Shape::Fixed(f) => f.plan(n, one_leaf_per_job),
            Shape::Flat(f) => f.plan(n),
        }
    }

    /// The number of jobs of [`Layout::plan`] (without `one_leaf_per_job`), counted without
    /// making them: what a caller given a size it has not read checks before planning it
    /// (2^63 bytes would be billions of jobs).
    pub fn job_count(self, alg: Algorithm, n: u64) -> u64 {
        match self.shape() {
            Shape::Whole => plain::job_count(alg, n),
            Shape::Halving => halving::leaf_count(n),
            Shape::Fixed(f) => f.job_count(n),
            Shape::Flat(f) => f.parts(n),
        }
    }

    /// A hasher for a job of [`Layout::plan`] of the given kind.
    pub fn hasher_for(self, alg: Algorithm, kind: JobKind) -> JobHasher {
        match kind {
            JobKind::Layout => self.job_hasher(alg),
            JobKind::Part => JobHasher(JobState::Message(alg.bulk_hasher())),
            JobKind::Subtree { offset } => {
                JobHasher(JobState::Message(Hasher::subtree(alg, offset)))
            }
        }
    }

    /// The leaf size of the job hasher [`Layout::hasher_for`] gives for `alg` and `kind` if
    /// it hashes a chunk's whole leaves side by side in SIMD lanes: the fixed-leaf layouts,
    /// where [`Kernel::multi_buffer`] has a kernel for `alg`. A reader can then lay a chunk's
    /// leaves out for the lanes ([`crate::source::RangeReader::spread`]).
    pub fn lane_leaf(self, alg: Algorithm, kind: JobKind) -> Option<LeafSize> {
        match (self.shape(), kind) {
            (Shape::Fixed(f), JobKind::Layout) => {
                Kernel::multi_buffer(alg).and_then(|_| LeafSize::new(f.leaf))
            }
            _ => None,
        }
    }

    /// A hasher for one job of [`Layout::jobs`], or for a whole stream of unknown length
    /// (where the layout allows it).
    ///
    /// With a fixed-leaf layout it hashes the leaves that a chunk holds whole several at once
    /// in SIMD lanes ([`crate::lanes`]) where the CPU has a multi-buffer kernel for the
    /// algorithm, as far as `MTSUM_SIMD` allows ([`Kernel::multi_buffer`]).
    pub fn job_hasher(self, alg: Algorithm) -> JobHasher {
        // Every algorithm's kernel beats its one stream on whole leaves of every size: short
        // leaves hashed one after another ran SHA-256 at one SHA-NI stream (half the two-stream
        // kernel) and SHA-512 at one OpenSSL stream (a third of the AVX-512 lanes); see
        // docs/performance-choices.md, "Fixed leaves: where the time goes". Even 64-byte leaves
        // gain on two SHA-NI lanes now that messages of one length skip the job manager.
        self.job_hasher_with_lanes(alg, Kernel::multi_buffer(alg))
    }

    /// [`Layout::job_hasher`] with the multi-buffer kernel chosen by the caller: `None` hashes
    /// one leaf after another. Lanes apply only to the fixed-leaf layouts; the digest is the
    /// same either way.
    ///
    /// # Panics
    /// If `lanes` is a kernel of another algorithm than `alg`.
    pub fn job_hasher_with_lanes(self, alg: Algorithm, lanes: Option<Kernel>) -> JobHasher {
        if let Some(kernel) = lanes {
            assert_eq!(kernel.algorithm(), alg, "a kernel of another algorithm");
        }
        JobHasher(match self.shape() {
            Shape::Whole | Shape::Halving => JobState::Message(self.leaf_hasher(alg)),
            Shape::Fixed(f) => JobState::Leaves(f.job_hasher(alg, lanes)),
            Shape::Flat(f) => JobState::Parts(Box::new(f.job_hasher(alg))),
        })
    }

    /// A combiner for the job digests of one stream.
    pub fn combiner(self, alg: Algorithm) -> Combiner {
        let acc = match self.shape() {
            Shape::Whole if alg.is_crc() => Acc::Crc(None),
            Shape::Whole | Shape::Halving => Acc::Pieces(Vec::new()),
            Shape::Fixed(f) => Acc::Stack(f, Stack::default()),
            Shape::Flat(f) => Acc::Flat(Box::new(Outer::new(f, alg))),
        };
        Combiner {
            layout: self,
            alg,
            waiting: BTreeMap::new(),
            next: 0,
            acc,
        }
    }
}

impl fmt::Display for Layout {
    /// The name, with the size chosen where the layout has one: `mtsum`, `rfc6962-1M`, `s3-8M`,
    /// and the parts where they differ: `s3-5M,7M,5M,1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Layout::S3Parts(parts) = self {
            return write!(f, "{}-{parts}", self.name());
        }
        match self.size_parameter() {
            Some(size) => write!(f, "{}-{size}", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

/// Why a layout could not be built from the command line, or does not go with an algorithm.
/// The message names the settings that would work in the words of the front end that asked
/// ([`Worded`]); its `Display` is the command line's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutError {
    Unknown(String),
    NoLeafSize(&'static str),
    PartSize(LeafSize, &'static str),
    CrcInTree {
        layout: &'static str,
        alg: Algorithm,
    },
    Algorithm {
        layout: &'static str,
        alg: Algorithm,
        allowed: &'static str,
    },
    FullObjectOnly(Algorithm),
    /// Part sizes S3 would not take ([`PartList::new`]): why.
    PartList(String),
}

impl Worded for LayoutError {
    fn write_in(&self, f: &mut fmt::Formatter<'_>, dialect: Dialect) -> fmt::Result {
        match self {
            LayoutError::Unknown(name) => {
                write!(f, "unknown layout '{name}' (known: {})", NAMES.join(", "))
            }
            LayoutError::NoLeafSize(layout) => write!(
                f,
                "the {layout} layout has no leaf size; {} applies to merkle and rfc6962, {} to s3",
                dialect.name(Setting::LeafSize),
                dialect.name(Setting::PartSize(None))
            ),
            LayoutError::PartSize(size, why) => write!(f, "invalid part size {size}: {why}"),
            LayoutError::CrcInTree { layout, alg } => write!(
                f,
                "{alg} is a CRC, which has no meaning in the tree of the {layout} layout; use {}",
                crc_layouts(*alg, dialect)
            ),
            LayoutError::Algorithm {
                layout,
                alg,
                allowed,
            } => write!(
                f,
                "the {layout} layout is defined with {allowed} only, not {alg}"
            ),
            LayoutError::PartList(why) => write!(f, "invalid part sizes: {why}"),
            LayoutError::FullObjectOnly(alg) => write!(
                f,
                "S3 has no composite {alg} checksum (it is full-object only); use {}",
                dialect.name(Setting::LayoutAndAlgorithm("plain", alg.name()))
            ),
        }
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_in(f, Dialect::Cli)
    }
}

impl std::error::Error for LayoutError {}

/// The layouts a CRC is defined with, as the error of a CRC in a tree suggests them: S3 has
/// no composite CRC64NVME, so only what works is offered.
fn crc_layouts(alg: Algorithm, dialect: Dialect) -> String {
    let plain = dialect.name(Setting::Layout(&["plain"]));
    match s3::check_algorithm(alg) {
        Ok(()) => format!(
            "{plain} (the full-object CRC) or {} (S3's composite checksum)",
            dialect.name(Setting::Layout(&["s3"]))
        ),
        Err(_) => format!("{plain} (the full-object CRC)"),
    }
}

/// Receives the nodes of a tree from [`Layout::walk`], children before parents.
pub trait TreeBuilder {
    /// Whatever the builder makes of a node: a digest, a graph node id, nothing.
    type Node;
    /// Leaf number `index`, covering `range` of the stream.
    fn leaf(&mut self, index: usize, range: Range<u64>) -> Self::Node;
    /// An inner node over `range` with two children; `is_root` for the top one.
    fn inner(
        &mut self,
        range: Range<u64>,
        left: Self::Node,
        right: Self::Node,
        is_root: bool,
    ) -> Self::Node;
}

/// The largest power of two that is at most `x` (`x` > 0).
fn prev_power_of_two(x: u64) -> u64 {
    1 << (63 - x.leading_zeros())
}

/// Computes digests bottom-up, taking leaf digests from `leaf`.
pub struct Fold<F> {
    pub layout: Layout,
    pub alg: Algorithm,
    pub leaf: F,
}

impl<F: FnMut(usize, Range<u64>) -> Digest> TreeBuilder for Fold<F> {
    type Node = Digest;
    fn leaf(&mut self, index: usize, range: Range<u64>) -> Digest {
        (self.leaf)(index, range)
    }
    fn inner(&mut self, _: Range<u64>, l: Digest, r: Digest, is_root: bool) -> Digest {
        self.layout.hash_node(self.alg, &l, &r, is_root)
    }
}

/// How the hasher of a job of [`Layout::plan`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// A job of [`Layout::jobs`], or a whole stream: [`Layout::job_hasher`].
    Layout,
    /// The subtree of a tree algorithm's own tree that starts at byte `offset`, whose digest
    /// is a chaining value for [`Combiner`] to join.
    Subtree { offset: u64 },
    /// One part of a flat layout, one message however long: the parts of a list differ in
    /// size, so the hasher of a part cannot tell where one ends by its length alone.
    Part,
}

/// Hashes one job (or a whole stream) fed as chunks of any size.
#[derive(Clone)]
pub struct JobHasher(JobState);

#[derive(Clone)]
enum JobState {
    /// One message: a leaf of `mtsum`, a `plain` stream or piece of one.
    Message(Hasher),
    /// Whole leaves of a fixed-leaf layout.
    Leaves(LeafRun),
    /// A part of a flat layout (or a whole stream of parts); boxed, as it holds two hashers.
    Parts(Box<PartRun>),
}

impl JobHasher {
    /// Absorbs the next bytes of the job.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.0 {
            JobState::Message(h) => h.update(data),
            JobState::Leaves(run) => run.update(data),
            JobState::Parts(run) => run.update(data),
        }
    }

    /// Absorbs the next bytes of the job where a read left them: side by side, or in pieces
    /// (a spread read's, [`crate::source::RangeReader::spread`]), whose leaves the fixed-leaf
    /// layouts hash where they lie.
    pub fn update_pieces(&mut self, pieces: Pieces<'_>) {
        match &mut self.0 {
            JobState::Leaves(run) => run.update_pieces(pieces),
            _ => pieces.iter().for_each(|piece| self.update(piece)),
        }
    }

    /// The job's digest: the leaf for `plain` and `mtsum`, the subtree root for the
    /// fixed-leaf layouts (`H("")` if nothing was fed, the empty stream's root), the part's
    /// digest for the flat layouts (their root for a whole stream of many parts).
    pub fn finalize(self) -> Digest {
        match self.0 {
            JobState::Message(h) => h.finalize(),
            JobState::Leaves(run) => run.finalize(),
            JobState::Parts(run) => run.finalize(),
        }
    }
}

/// Folds job digests, which may arrive in any order, into the root.
pub struct Combiner {
    layout: Layout,
    alg: Algorithm,
    /// Job digests that arrived before an earlier job's, by job index: the fold takes them
    /// in order, so this holds only what is out of order.
    waiting: BTreeMap<usize, (Range<u64>, Digest)>,
    /// The index of the next job to fold.
    next: usize,
    acc: Acc,
}

/// What the fold keeps of the jobs folded so far.
enum Acc {
    /// Every job digest (`mtsum`'s leaves, `plain`'s BLAKE3 subtrees: few).
    Pieces(Vec<(Range<u64>, Digest)>),
    /// The CRC of the stream so far.
    Crc(Option<Digest>),
    Stack(Fixed, Stack),
    Flat(Box<Outer>),
}

impl Combiner {
    /// Records the digest of the job `index` of [`Layout::plan`], which covers `range`.
    pub fn add(&mut self, index: usize, range: Range<u64>, digest: Digest) {
        self.waiting.insert(index, (range, digest));
        while let Some((range, digest)) = self.waiting.remove(&self.next) {
            self.fold(range, digest);
            self.next += 1;
        }
    }

    fn fold(&mut self, range: Range<u64>, digest: Digest) {
        let alg = self.alg;
        match &mut self.acc {
            Acc::Pieces(pieces) => pieces.push((range, digest)),
            Acc::Crc(crc) => {
                let len = range.end - range.start;
                *crc = Some(match *crc {
                    Some(left) => crate::algorithm::combine_crcs(alg, &left, &digest, len),
                    None => digest,
                });
            }
            // An empty job (the empty stream) holds no leaf.
            Acc::Stack(_, _) if range.is_empty() => {}
            Acc::Stack(shape, stack) => {
                let slots = shape.slots(range.end - range.start);
                stack.push(shape, alg, slots, digest);
            }
            Acc::Flat(outer) => outer.push(range, digest),
        }
    }

    /// The root of the stream of `n` bytes whose jobs were added; an error for a stream the
    /// layout has no root for ([`Layout::check_size`]).
    ///
    /// # Panics
    /// If a job of the plan was never added: a bug in the caller, not bad input.
    pub fn finish(self, n: u64) -> Result<Root, NoRoot> {
        assert!(self.waiting.is_empty(), "every job was hashed");
        self.layout.check_size(n)?;
        let (layout, alg) = (self.layout, self.alg);
        let root = match self.acc {
            Acc::Pieces(pieces) if layout.needs_length() => {
                let leaves: Vec<Digest> = pieces.into_iter().map(|(_, d)| d).collect();
                Root::new(layout.root_from_leaves(alg, n, &leaves))
            }
            Acc::Pieces(pieces) => Root::new(plain::join(alg, &pieces)),
            Acc::Crc(crc) => Root::new(crc.unwrap_or_else(|| alg.hash(b""))),
            Acc::Stack(shape, stack) => match stack.finish(&shape, alg) {
                Some(digest) => Root::new(digest),
                None if shape.top == Top::Padded => return Err(NoRoot::EmptyFile(layout.name())),
                None => Root::new(alg.hash(b"")),
            },
            Acc::Flat(outer) => outer.finish(),
        };
        Ok(root.with_encoding(layout.encoding(alg)))
    }
}
