//! `mtsum -g`: the tree drawn as Graphviz DOT has the shape of the walk, one node per tree
//! node, leaves as boxes, and the root that `mtsum` prints; odd file names cannot break it.

mod common;

use std::ops::Range;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use mtsum::engine::Request;
use mtsum::layout::{Fold, TreeBuilder};
use mtsum::{Algorithm, Digest, Layout, LeafSize, graph, reference};

use common::feed;

/// How many leaves and inner nodes the walk of `n` bytes has, by the walk itself.
fn shape(layout: Layout, n: u64) -> (usize, usize) {
    struct Count(usize, usize);
    impl TreeBuilder for Count {
        type Node = ();
        fn leaf(&mut self, _: usize, _: Range<u64>) {
            self.0 += 1;
        }
        fn inner(&mut self, _: Range<u64>, _: (), _: (), _: bool) {
            self.1 += 1;
        }
    }
    let mut count = Count(0, 0);
    layout.walk(n, &mut count);
    (count.0, count.1)
}

/// The leaf digests of `data` in walk order, as the engine keeps them for `-g`.
fn leaf_digests(layout: Layout, alg: Algorithm, data: &[u8]) -> Vec<Digest> {
    let mut leaves = Vec::new();
    let mut fold = Fold {
        layout,
        alg,
        leaf: |_, r: Range<u64>| {
            let d = layout.hash_leaf(alg, &data[r.start as usize..r.end as usize]);
            leaves.push(d);
            d
        },
    };
    layout.walk(data.len() as u64, &mut fold);
    leaves
}

fn draw(layout: Layout, alg: Algorithm, data: &[u8], name: &str) -> graph::Drawing {
    let leaves = leaf_digests(layout, alg, data);
    graph::draw(&Request::new(layout, alg), data.len() as u64, &leaves, name)
}

fn merkle(leaf: u64) -> Layout {
    Layout::Merkle(LeafSize::new(leaf).unwrap())
}

fn rfc6962(leaf: u64) -> Layout {
    Layout::Rfc6962(LeafSize::new(leaf).unwrap())
}

/// What a test needs to know of a DOT text; `graph` writes one statement per line.
#[derive(Debug, Default)]
struct Dot {
    title: String,
    /// (id, attributes of its declaration), in order.
    nodes: Vec<(String, String)>,
    /// Extra attribute statements for an already declared node.
    restyled: Vec<(String, String)>,
    edges: Vec<(String, String)>,
}

impl Dot {
    fn parse(text: &str) -> Dot {
        let mut dot = Dot::default();
        let body = text
            .strip_prefix("digraph mtsum {\n")
            .and_then(|t| t.strip_suffix("}\n"))
            .unwrap_or_else(|| panic!("not one digraph:\n{text}"));
        for line in body.lines().map(str::trim) {
            if let Some(title) = line.strip_prefix("label=") {
                dot.title = title.to_string();
            } else if let Some((from, to)) = line.split_once(" -> ") {
                dot.edges
                    .push((from.into(), to.trim_end_matches(';').into()));
            } else if let Some((id, attrs)) = line.split_once(" [") {
                if id == "node" || id == "edge" {
                    continue;
                }
                assert!(id.starts_with('n'), "node id {id}");
                let entry = (id.to_string(), attrs.to_string());
                if dot.nodes.iter().any(|(n, _)| *n == entry.0) {
                    dot.restyled.push(entry);
                } else {
                    dot.nodes.push(entry);
                }
            } else {
                // A raw newline in a label would end up here.
                let known = ["labelloc=t;", "ordering=out;"];
                assert!(
                    known.contains(&line),
                    "unexpected line {line:?} in:\n{text}"
                );
            }
        }
        dot
    }

    fn count_nodes_with(&self, attr: &str) -> usize {
        self.nodes.iter().filter(|(_, a)| a.contains(attr)).count()
    }

    /// The full root digest the title shows.
    fn root_hex(&self) -> &str {
        let (_, root) = self
            .title
            .rsplit_once("\\nroot ")
            .expect("a root in the title");
        root.trim_end_matches("\";")
    }

    /// The one node no edge points to.
    fn top(&self) -> &str {
        let tops: Vec<&str> = self
            .nodes
            .iter()
            .map(|(id, _)| id.as_str())
            .filter(|id| !self.edges.iter().any(|(_, to)| to == id))
            .collect();
        assert_eq!(tops.len(), 1, "one root in {self:?}");
        tops[0]
    }
}

/// Checks everything a drawing of `leaves` leaves must satisfy, whatever the layout.
fn assert_well_formed(dot: &Dot, leaves: usize, root: &Digest) {
    let inner = leaves.saturating_sub(1);
    // 2·leaves − 1; a tree without leaves is still drawn, as one box for H("").
    let nodes = (leaves + inner).max(1);
    assert_eq!(dot.nodes.len(), nodes, "node count in {dot:?}");
    assert_eq!(dot.edges.len(), 2 * inner, "two edges per inner node");
    assert_eq!(
        dot.count_nodes_with("shape=box"),
        nodes - inner,
        "leaves are boxes"
    );
    assert_eq!(dot.count_nodes_with("shape=ellipse"), inner);
    assert_eq!(dot.root_hex(), root.to_hex(), "the title shows the root");
    let top = dot.top();
    assert_eq!(dot.restyled.len(), 1);
    assert_eq!(dot.restyled[0].0, top, "the root is highlighted");
    assert!(dot.restyled[0].1.contains("penwidth=2"));
    for (from, to) in &dot.edges {
        assert!(
            dot.nodes.iter().any(|(id, _)| id == from),
            "edge from {from}"
        );
        assert!(dot.nodes.iter().any(|(id, _)| id == to), "edge to {to}");
    }
}

/// Whether Graphviz is installed; says once why its checks are skipped when it is not.
fn graphviz() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        let found = Command::new("dot")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            eprintln!("skipping the `dot -Tsvg` checks: Graphviz is not installed");
        }
        found
    })
}

/// Asserts that `dot -Tsvg` accepts `text`, when Graphviz is installed.
fn assert_renders(text: &str) {
    if !graphviz() {
        return;
    }
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dot runs");
    // dot may reject the text before reading all of it; its status says so.
    feed(child.stdin.take().unwrap(), text.as_bytes());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "dot -Tsvg rejected:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn root_of_empty_file_has_two_empty_leaves() {
    let (layout, alg) = (Layout::Mtsum, Algorithm::Sha256);
    let drawing = draw(layout, alg, b"", "empty");
    let dot = Dot::parse(&drawing.dot);
    assert_eq!(drawing.root, reference::root(layout, alg, b""));
    assert_well_formed(&dot, 2, &drawing.root);
    assert_eq!(dot.count_nodes_with("[0, 0)"), 3);
    assert_renders(&drawing.dot);
}

#[test]
fn drawn_root_is_the_reference_root_for_every_layout_and_size() {
    let layouts = [
        Layout::Mtsum,
        Layout::Plain,
        merkle(64),
        rfc6962(64),
        merkle(1),
    ];
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
    for layout in layouts {
        for n in [0, 1, 2, 3, 63, 64, 65, 128, 129, 300, 1000] {
            for alg in [Algorithm::Sha256, Algorithm::Blake3, Algorithm::Xxh3] {
                let data = &data[..n];
                let drawing = draw(layout, alg, data, "data");
                let root = reference::root(layout, alg, data);
                assert_eq!(drawing.root, root, "{layout} {alg} {n} bytes");
                let (leaves, inner) = shape(layout, n as u64);
                assert_eq!(inner, leaves.saturating_sub(1));
                assert_well_formed(&Dot::parse(&drawing.dot), leaves, &root);
                if alg == Algorithm::Sha256 && n % 2 == 1 {
                    assert_renders(&drawing.dot);
                }
            }
        }
    }
}

#[test]
fn merkle_tree_of_five_leaves_has_nine_nodes() {
    let layout = merkle(64);
    let data = vec![7u8; 4 * 64 + 10];
    assert_eq!(shape(layout, data.len() as u64), (5, 4));
    let drawing = draw(layout, Algorithm::Sha256, &data, "five");
    let dot = Dot::parse(&drawing.dot);
    assert_well_formed(&dot, 5, &reference::root(layout, Algorithm::Sha256, &data));
    // The left subtree takes the largest power of two of leaves: [0, 256) over four.
    assert_eq!(dot.count_nodes_with("leaf "), 5);
    assert_eq!(dot.count_nodes_with("\"[0, 256)\\n"), 1);
    assert_eq!(dot.count_nodes_with("\"leaf 4\\n[256, 266)\\n"), 1);
}

#[test]
fn plain_layout_is_one_leaf_that_is_the_root() {
    let drawing = draw(Layout::Plain, Algorithm::Sha256, b"abc", "abc");
    let dot = Dot::parse(&drawing.dot);
    assert_well_formed(&dot, 1, &drawing.root);
    assert_eq!(
        drawing.root.to_hex(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn empty_input_under_a_fixed_leaf_layout_is_one_node_for_the_empty_hash() {
    for layout in [merkle(64), rfc6962(4096)] {
        let drawing = draw(layout, Algorithm::Sha256, b"", "empty");
        assert_eq!(drawing.root, Algorithm::Sha256.hash(b""));
        let dot = Dot::parse(&drawing.dot);
        assert_well_formed(&dot, 0, &drawing.root);
        assert_renders(&drawing.dot);
    }
}

#[test]
#[should_panic(expected = "one digest per leaf")]
fn too_many_leaf_digests_are_a_bug_in_the_caller() {
    let d = Algorithm::Sha256.hash(b"");
    graph::draw(
        &Request::new(Layout::Plain, Algorithm::Sha256),
        3,
        &[d, d],
        "x",
    );
}

#[test]
fn odd_file_names_cannot_break_the_dot_text() {
    for name in [
        "a \"quoted\" name",
        "back\\slash\\",
        "new\nline",
        "\\\"",
        "tab\tcr\r",
    ] {
        let drawing = draw(Layout::Mtsum, Algorithm::Sha256, b"abc", name);
        let dot = Dot::parse(&drawing.dot);
        assert_well_formed(&dot, 2, &drawing.root);
        assert_renders(&drawing.dot);
    }
    let drawing = draw(Layout::Mtsum, Algorithm::Sha256, b"", "a\"b\\c\nd");
    assert!(
        drawing
            .dot
            .contains(r#"label="a\"b\\c\nd\nmtsum tree, sha256, 0 bytes\nroot "#),
        "{}",
        drawing.dot
    );
}

// Through the real binary.

fn mtsum(args: &[&str], file: &Path) -> String {
    let out = common::run::run_cmd(assert_cmd::Command::new(common::MTSUM).args(args).arg(file));
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    out.stdout().to_string()
}

/// Runs `mtsum -g ARGS FILE` and checks the drawing against `mtsum --no-names ARGS FILE`.
fn check_binary(args: &[&str], file: &Path, layout: Layout) -> Dot {
    let text = mtsum(&[&["-g"][..], args].concat(), file);
    let printed = mtsum(&[&["--no-names"][..], args].concat(), file);
    let root = Digest::from_hex(printed.trim()).expect("a hex digest");
    let (leaves, _) = shape(layout, std::fs::metadata(file).unwrap().len());
    let dot = Dot::parse(&text);
    assert_well_formed(&dot, leaves, &root);
    assert_renders(&text);
    dot
}

#[test]
fn binary_draws_an_empty_file_as_a_root_over_two_empty_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("empty");
    std::fs::write(&file, b"").unwrap();
    check_binary(&[], &file, Layout::Mtsum);
}

#[test]
fn binary_draws_a_sparse_300_mb_file_as_four_leaves_under_mtsum() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sparse");
    let n = 300_000_000;
    std::fs::File::create(&file).unwrap().set_len(n).unwrap();
    assert_eq!(shape(Layout::Mtsum, n), (4, 3));
    let dot = check_binary(&[], &file, Layout::Mtsum);
    assert_eq!(dot.count_nodes_with("[225000000, 300000000)"), 1);
}

#[test]
fn binary_draws_five_4k_leaves_under_merkle() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("five");
    std::fs::write(&file, vec![1u8; 4 * 4096 + 100]).unwrap();
    let dot = check_binary(&["-t", "merkle", "-l", "4K"], &file, merkle(4096));
    assert_eq!(dot.nodes.len(), 9);
    assert!(dot.title.contains("merkle-4K tree, sha256"));
}

#[test]
fn binary_draws_the_chosen_algorithm_and_layout() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, vec![2u8; 1000]).unwrap();
    let dot = check_binary(
        &["-t", "rfc6962", "-l", "64", "-a", "blake3"],
        &file,
        rfc6962(64),
    );
    assert!(dot.title.contains("rfc6962-64 tree, blake3, 1000 bytes"));
}

#[test]
fn binary_draws_an_empty_file_under_merkle_as_one_node() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("empty");
    std::fs::write(&file, b"").unwrap();
    check_binary(&["-t", "merkle"], &file, merkle(1 << 20));
}

#[test]
fn binary_escapes_a_file_name_with_quotes_backslashes_and_newlines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("we\"ird\\name\nhere");
    std::fs::write(&file, b"hello").unwrap();
    let dot = check_binary(&[], &file, Layout::Mtsum);
    assert!(
        dot.title.contains(r#"we\"ird\\name\nhere\nmtsum tree"#),
        "{}",
        dot.title
    );
}
