//! The values one read of an input is hashed for, where a value may have been made under any of
//! several layouts: an S3 ETag whose part size nobody wrote down (`-c --part-size auto`, and
//! `--compare` against a store that does not tell it). Every size is tried in the same read
//! (the request's own digest and the engine's side outputs, [`Side`]), so that a file is read
//! once and a remote object downloaded once, however many sizes there are; `-c` and
//! `--compare` both ask and decide through [`Tries`].

use crate::algorithm::Algorithm;
use crate::engine::{FileDigest, Request, Side};
use crate::layout::{Layout, Root};

/// A value, and the layouts it is tried with in one read; the first that gives it wins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tries {
    pub algorithm: Algorithm,
    /// The value, in its encoding.
    pub expected: Root,
    /// One or more, in the order they are tried.
    layouts: Vec<Layout>,
}

/// What the read of a [`Tries`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The layout whose value matched, else the first one's.
    pub layout: Layout,
    /// That layout's value of the bytes.
    pub root: Root,
    pub matched: bool,
}

impl Tries {
    /// `expected` under `layout` alone.
    pub fn one(layout: Layout, algorithm: Algorithm, expected: Root) -> Tries {
        Tries {
            algorithm,
            expected,
            layouts: vec![layout],
        }
    }

    /// `expected`, the value of `size` bytes under `layout` with a size nobody wrote down,
    /// under each size worth trying ([`Layout::size_guesses`], at most
    /// [`PartSize::MAX_GUESSES`](crate::layout::PartSize::MAX_GUESSES)); `None` where the
    /// layout guesses none.
    pub fn guessed(
        layout: Layout,
        algorithm: Algorithm,
        size: u64,
        expected: Root,
    ) -> Option<Tries> {
        let layouts = layout.size_guesses(size, &expected);
        (!layouts.is_empty()).then_some(Tries {
            algorithm,
            expected,
            layouts,
        })
    }

    /// The layouts tried, in order.
    pub fn layouts(&self) -> &[Layout] {
        &self.layouts
    }

    /// The one request that hashes the input for every layout: the first is its own, the
    /// others side outputs of the same read.
    pub fn request(&self) -> Request {
        let alg = self.algorithm;
        Request {
            side: Side {
                digests: self.layouts[1..].iter().map(|&l| (l, alg)).collect(),
                leaves: None,
                xattr: None,
            },
            ..Request::new(self.layouts[0], alg)
        }
    }

    /// What the read of [`Tries::request`] gave: the first layout whose value is the
    /// expected one ([`Layout::matches`]), else the first layout.
    pub fn found(&self, digest: &FileDigest) -> Found {
        let roots = std::iter::once(&digest.root).chain(&digest.side.digests);
        let all: Vec<(Layout, &Root)> = self.layouts.iter().copied().zip(roots).collect();
        let alg = self.algorithm;
        let matched = all
            .iter()
            .find(|(layout, root)| layout.matches(alg, root, &self.expected));
        let (layout, root) = matched.unwrap_or(&all[0]);
        Found {
            layout: *layout,
            root: **root,
            matched: matched.is_some(),
        }
    }
}
