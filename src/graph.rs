//! A tree drawn as a Graphviz DOT graph (`-g`).
//!
//! The drawing is a [`TreeBuilder`] over [`Layout::walk`], so it has exactly the shape the
//! digest was computed over; the inner digests come from [`Fold`], the same fold as the
//! reference path, so the root drawn is the root printed. Pipe it into Graphviz:
//!
//! ```text
//! mtsum -g FILE | dot -Tsvg > tree.svg
//! ```
//!
//! [`Layout::walk`]: crate::layout::Layout::walk

use std::fmt::Write;
use std::ops::Range;

use crate::algorithm::Digest;
use crate::engine::Request;
use crate::layout::{Fold, LeafSize, TreeBuilder};

/// Hex digits of a digest shown in a node; the full root is in the title.
const SHORT_HEX: usize = 10;

/// A tree drawn in DOT, with the root it was drawn to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drawing {
    /// The DOT text, ready for `dot -Tsvg`.
    pub dot: String,
    /// The root digest, computed from the leaf digests along the drawn tree.
    pub root: Digest,
}

/// The DOT text of the tree of a `size`-byte input whose leaf digests are `leaves`.
///
/// # Panics
/// As [`draw`].
pub fn dot(request: &Request, size: u64, leaves: &[Digest], name: &str) -> String {
    draw(request, size, leaves, name).dot
}

/// Draws the tree of a `size`-byte input named `name` whose leaf digests are `leaves`, in
/// the order of [`Layout::walk`](crate::layout::Layout::walk).
///
/// ```
/// use mtsum::engine::Request;
/// use mtsum::{Algorithm, Layout, graph, reference};
/// let (layout, alg) = (Layout::Mtsum, Algorithm::Sha256);
/// let leaf = layout.hash_leaf(alg, b"");
/// let drawing = graph::draw(&Request::new(layout, alg), 0, &[leaf, leaf], "empty");
/// assert_eq!(drawing.root, reference::root(layout, alg, b""));
/// assert!(drawing.dot.starts_with("digraph mtsum {"));
/// ```
///
/// # Panics
/// If `leaves` does not hold exactly one digest per leaf of the walk.
pub fn draw(request: &Request, size: u64, leaves: &[Digest], name: &str) -> Drawing {
    let (layout, alg) = (request.layout, request.algorithm);
    let mut drawer = Drawer {
        fold: Fold {
            layout,
            alg,
            leaf: |i: usize, _: Range<u64>| leaves[i],
        },
        body: String::new(),
        nodes: 0,
        leaves: 0,
    };
    let root = match layout.walk(size, &mut drawer) {
        Some(root) => root,
        // A fixed-leaf layout over empty input has no node at all; its root is H("").
        None => {
            let digest = layout.root_from_leaves(alg, 0, &[]);
            let label = format!("empty input\nH(\"\") {}", short(&digest));
            let id = drawer.node(&label, LEAF_STYLE);
            Drawn { id, digest }
        }
    };
    assert_eq!(drawer.leaves, leaves.len(), "one digest per leaf");

    let title = format!(
        "{name}\n{layout} tree, {alg}, {size} bytes\nroot {}",
        root.digest
    );
    let mut dot = String::from("digraph mtsum {\n");
    // `let _ = writeln!`: writing to a `String` cannot fail.
    let _ = writeln!(dot, "  label={};", quote(&title));
    dot.push_str(concat!(
        "  labelloc=t;\n",
        "  ordering=out;\n",
        "  node [fontname=\"monospace\", fontsize=10, style=filled];\n",
        "  edge [arrowsize=0.6];\n",
    ));
    dot.push_str(&drawer.body);
    // Written after the walk because only then is it known which node is the root: for
    // `plain` and for a one-leaf tree it is a leaf. A later statement adds to the attributes.
    let _ = writeln!(dot, "  n{} [{ROOT_STYLE}];", root.id);
    dot.push_str("}\n");
    Drawing {
        dot,
        root: root.digest,
    }
}

const LEAF_STYLE: &str = "shape=box, fillcolor=\"#dbeafe\"";
const INNER_STYLE: &str = "shape=ellipse, fillcolor=\"#f3f4f6\"";
const ROOT_STYLE: &str = "fillcolor=\"#fde68a\", penwidth=2";

/// A node already written: its DOT id and its digest.
struct Drawn {
    id: usize,
    digest: Digest,
}

/// Writes one DOT node per tree node and one edge per parent–child pair, in walk order.
struct Drawer<F> {
    fold: Fold<F>,
    /// Node and edge statements.
    body: String,
    nodes: usize,
    leaves: usize,
}

impl<F> Drawer<F> {
    /// Writes a node `n<id>` and returns its id.
    fn node(&mut self, label: &str, style: &str) -> usize {
        let id = self.nodes;
        self.nodes += 1;
        let _ = writeln!(self.body, "  n{id} [label={}, {style}];", quote(label));
        id
    }
}

impl<F: FnMut(usize, Range<u64>) -> Digest> TreeBuilder for Drawer<F> {
    type Node = Drawn;

    fn leaf(&mut self, index: usize, range: Range<u64>) -> Drawn {
        self.leaves += 1;
        let digest = self.fold.leaf(index, range.clone());
        let label = format!("leaf {index}\n{}\n{}", span(&range), short(&digest));
        let id = self.node(&label, LEAF_STYLE);
        Drawn { id, digest }
    }

    fn inner(&mut self, range: Range<u64>, left: Drawn, right: Drawn, is_root: bool) -> Drawn {
        let digest = self
            .fold
            .inner(range.clone(), left.digest, right.digest, is_root);
        let label = format!("{}\n{}", span(&range), short(&digest));
        let id = self.node(&label, INNER_STYLE);
        let _ = writeln!(self.body, "  n{id} -> n{};", left.id);
        let _ = writeln!(self.body, "  n{id} -> n{};", right.id);
        Drawn { id, digest }
    }
}

/// A byte range as `[start, end)`, each bound spelled as `-l` sizes are (`4K`, `64M`, or
/// plain digits when no binary unit divides it): exact, and short where it can be.
fn span(range: &Range<u64>) -> String {
    let bytes = |n| LeafSize::new(n).map_or_else(|| "0".to_string(), |b| b.to_string());
    format!("[{}, {})", bytes(range.start), bytes(range.end))
}

/// The first hex digits of a digest and an ellipsis: enough to tell nodes apart.
fn short(digest: &Digest) -> String {
    let hex = digest.to_hex();
    format!("{}…", &hex[..SHORT_HEX.min(hex.len())])
}

/// `text` as a DOT string literal that Graphviz shows as `text`: `"` and `\` are escaped,
/// a newline becomes a line break (`\n`), and other control characters are shown as Rust
/// escapes (`\r`, `\u{1b}`) rather than passed to the renderer. File names are user input,
/// so nothing in them may end the string or inject attributes.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                out.push_str(&c.escape_default().to_string().replace('\\', "\\\\"))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_backslashes_and_newlines_cannot_end_the_string() {
        assert_eq!(quote("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
        assert_eq!(quote("tab\there\r"), r#""tab\\there\\r""#);
    }

    #[test]
    fn spans_use_the_shortest_exact_spelling() {
        assert_eq!(span(&(0..64 << 20)), "[0, 64M)");
        assert_eq!(span(&(4096..4100)), "[4K, 4100)");
    }
}
