//! mtsum: checksums of huge files as Merkle trees, hashed on every core.
//!
//! The library is organised by concept:
//! - [`algorithm`]: the hash functions and the [`Digest`] value;
//! - [`layout`]: how a stream is cut into leaves and folded into a root;
//! - [`reference`](mod@reference): every layout by its definition, the oracle of the tests;
//! - [`source`]: where bytes come from (files, block devices, pipes, `s3://` and `http(s)://`
//!   objects) and how they are read, one file per role under `source/` (its module doc is
//!   the map); it also holds [`InputError`](source::InputError) and the layouts'
//!   [`NoRoot`](layout::NoRoot), so that reading needs nothing of the layouts;
//! - `size` (private; [`LeafSize`] is re-exported): sizes as users write them (`4K`, `1M`),
//!   below both the layouts and the sources;
//! - [`walk`]: the command line's paths expanded into inputs (`-r`, symbolic links);
//! - [`sumfile`]: the checksum line formats written and checked (`--tag`, `-z`, `-c`);
//! - [`json`]: `--json`, one object per input for scripts;
//! - [`check`]: `-c`, verifying the files listed in sum files; the verdict on one line
//!   ([`check::verdict`]) is a module of its own, which [`json`] renders;
//! - [`audit`]: `--audit`, records of each file's digest, size and mtime (extended attributes,
//!   a manifest or a database) and audits that tell corruption from modification, locate the
//!   damage and repair it from a copy;
//! - [`lanes`]: multi-buffer hashing (MD5, SHA-1, SHA-2), many messages at once on one core
//!   (SIMD lanes): one file per kernel, the table of kernels above them, and the helpers
//!   they share below them;
//! - [`range`]: one file hashed in ranges anywhere (partials) and combined into its root;
//! - [`engine`]: the worker pool that hashes the jobs of many files in parallel;
//! - [`tries`]: a value tried under several layouts (the part sizes guessed for an S3 ETag)
//!   in one read, for `-c` and `--compare`;
//! - [`graph`]: a tree drawn as a Graphviz DOT graph;
//! - [`report`]: what is printed besides checksum lines (timings, error lines);
//! - [`dialect`]: errors that suggest a setting, named as the command line or Python names it;
//! - [`stored`]: what a store already holds about its objects (`--stored`), and the layout,
//!   algorithm and value a local copy must give for each value it reports;
//! - [`compare`]: `--compare`, two trees (a directory, an `s3://` prefix) name by name,
//!   reading only the local side where the store's values vouch for an object; the verdict
//!   on one name ([`compare::record`]) is a module of its own, which [`json`] renders.
//!
//! No file imports one that imports it back: a type lives in the lowest module that all its
//! users share.
//!
//! ```
//! use mtsum::{Algorithm, Layout, reference};
//! let root = reference::root(Layout::Plain, Algorithm::Sha256, b"abc");
//! assert_eq!(root.to_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
//! ```

pub mod algorithm;
pub mod audit;
pub mod batch;
pub mod check;
pub mod compare;
pub mod dialect;
pub mod engine;
pub mod graph;
pub mod json;
pub mod lanes;
pub mod layout;
pub mod range;
pub mod reference;
pub mod replace;
pub mod report;
mod size;
pub mod source;
pub mod stored;
pub mod sumfile;
pub mod tries;
pub mod walk;

pub use algorithm::{Algorithm, Digest};

/// The crate's version, which the `mtsum` command and the Python package (`mtsum.__version__`)
/// report: one number for the library, the command and the wheel.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use layout::{Layout, LeafSize};
