//! Whose words a message uses when it suggests a setting: the command line's flags or the
//! Python package's keywords.
//!
//! Some errors say what to do instead: "the mtsum layout has no leaf size; -l/--leaf-size
//! applies to merkle and rfc6962". The rule behind that advice is the library's and is stated
//! once, where the error is made; only the name of the setting depends on who asked. A Python
//! user who wrote `leaf_size="4K"` should read `leaf_size=`, not a flag they never typed. So
//! such an error names each setting as a [`Setting`], and renders it in a [`Dialect`]: its
//! `Display` is the command line's, and [`Worded::in_dialect`] gives any other.
//!
//! ```
//! use mtsum::dialect::{Dialect, Worded};
//! use mtsum::{Algorithm, Layout};
//!
//! let e = Layout::Plain.check_algorithm(Algorithm::Sha256).and(
//!     Layout::from_name("s3", None).unwrap().check_algorithm(Algorithm::Crc64Nvme),
//! );
//! let e = e.unwrap_err();
//! assert!(e.to_string().ends_with("use -t plain -a crc64nvme"));
//! assert!(
//!     e.in_dialect(Dialect::Python)
//!         .to_string()
//!         .ends_with(r#"use layout="plain", algorithm="crc64nvme""#)
//! );
//! ```

use std::fmt;

/// The front end whose words name the settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// The command line: `-l/--leaf-size`, `-t plain`.
    #[default]
    Cli,
    /// The Python package's keyword arguments: `leaf_size=`, `layout="plain"`.
    Python,
}

/// A setting that a message suggests, with the value it suggests where it has one.
#[derive(Clone, Copy)]
pub enum Setting<'a> {
    /// The leaf size of the fixed-leaf layouts.
    LeafSize,
    /// S3's part size, which Python takes as the leaf size.
    PartSize(Option<&'a dyn fmt::Display>),
    /// One layout, or several alternatives (`plain, merkle or rfc6962`).
    Layout(&'a [&'a str]),
    /// A layout with an algorithm.
    LayoutAndAlgorithm(&'a str, &'a str),
    /// Hashing the input as a stream of unknown length.
    Stream,
}

impl Dialect {
    /// `setting` in this dialect's words, to put in a message.
    pub fn name(self, setting: Setting<'_>) -> String {
        use Dialect::{Cli, Python};
        match (self, setting) {
            (Cli, Setting::LeafSize) => "-l/--leaf-size".into(),
            (Python, Setting::LeafSize) => "leaf_size=".into(),
            (Cli, Setting::PartSize(None)) => "--part-size".into(),
            (Cli, Setting::PartSize(Some(size))) => format!("--part-size {size}"),
            (Python, Setting::PartSize(None)) => "leaf_size= (the part size)".into(),
            (Python, Setting::PartSize(Some(size))) => format!("leaf_size=\"{size}\""),
            (Cli, Setting::Layout(names)) => format!("-t {}", alternatives(names, |n| n.into())),
            (Python, Setting::Layout(names)) => {
                let quoted = alternatives(names, |n| format!("\"{n}\""));
                format!("layout={quoted}")
            }
            (Cli, Setting::LayoutAndAlgorithm(layout, alg)) => format!("-t {layout} -a {alg}"),
            (Python, Setting::LayoutAndAlgorithm(layout, alg)) => {
                format!("layout=\"{layout}\", algorithm=\"{alg}\"")
            }
            (Cli, Setting::Stream) => "mtsum - < FILE".into(),
            (Python, Setting::Stream) => "feed its bytes to mtsum.Hasher".into(),
        }
    }
}

/// `a`, `a or b`, `a, b or c`.
fn alternatives(names: &[&str], each: impl Fn(&str) -> String) -> String {
    let names: Vec<String> = names.iter().map(|n| each(n)).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A message that names settings, and can therefore be said in any [`Dialect`]. Its
/// `Display` is [`Dialect::Cli`].
pub trait Worded {
    /// Writes the message with the settings named in `dialect`.
    fn write_in(&self, f: &mut fmt::Formatter<'_>, dialect: Dialect) -> fmt::Result;

    /// The message in `dialect`, to display.
    fn in_dialect(&self, dialect: Dialect) -> InDialect<'_, Self> {
        InDialect(self, dialect)
    }
}

/// A [`Worded`] message with its dialect chosen: see [`Worded::in_dialect`].
pub struct InDialect<'a, T: ?Sized>(&'a T, Dialect);

impl<T: Worded + ?Sized> fmt::Display for InDialect<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write_in(f, self.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternatives_read_as_a_list() {
        assert_eq!(Dialect::Cli.name(Setting::Layout(&["plain"])), "-t plain");
        assert_eq!(
            Dialect::Cli.name(Setting::Layout(&["plain", "merkle", "rfc6962"])),
            "-t plain, merkle or rfc6962"
        );
        assert_eq!(
            Dialect::Python.name(Setting::Layout(&["plain", "merkle"])),
            r#"layout="plain" or "merkle""#
        );
    }

    #[test]
    fn a_part_size_is_pythons_leaf_size() {
        let size = "8M";
        assert_eq!(
            Dialect::Cli.name(Setting::PartSize(Some(&size))),
            "--part-size 8M"
        );
        assert_eq!(
            Dialect::Python.name(Setting::PartSize(Some(&size))),
            r#"leaf_size="8M""#
        );
    }
}
