//! `--stored s3://BUCKET/PREFIX/`: a sum file of what the store already holds about the
//! objects below each prefix, without reading their bytes ([`mtsum::stored`]): for each
//! object and each value it reports, a tagged line that names the layout, algorithm and
//! part size that give it, under the name relative to the prefix, so that `mtsum -c` run in
//! a local copy of the prefix checks the copy. A value that checks nothing (an SSE-KMS
//! ETag, parts of different sizes) is a comment line, `# NAME: why`, which `-c` passes
//! over; an object that no value checks is also said on stderr, and makes the status 1.
//! With `--json`, each value is a JSON object instead ([`json::stored_value`]), and an
//! object or prefix that fails one too, as hash mode's inputs do.

use mtsum::source::Target;
use mtsum::stored::{self, StoredObject};
use mtsum::sumfile::{self, Format, Terminator};
use mtsum::{json, report};

use crate::args::{Common, StoredSettings};
use crate::session::{self, Printer, Status};

pub fn run(common: &Common, settings: &StoredSettings) -> Status {
    let (_engine, printer) = session::start(common, || None);
    for target in &common.targets {
        let Target::Url(prefix) = target else {
            unreachable!("--stored takes URLs only (args/convert.rs)");
        };
        let objects = match stored::list_stored(prefix) {
            Ok(objects) => objects,
            Err(e) => {
                printer.message(&report::error_line(prefix.as_str().as_bytes(), &e));
                if settings.json {
                    printer.print(&json::error(prefix.as_str().as_bytes(), &e));
                }
                printer.fail();
                continue;
            }
        };
        for object in objects {
            match object {
                Ok(object) => print_object(&printer, &object, settings),
                Err((url, e)) => {
                    printer.message(&report::error_line(url.as_str().as_bytes(), &e));
                    if settings.json {
                        let name = url.as_str().strip_prefix(prefix.as_str());
                        let name = name.unwrap_or(url.as_str()).as_bytes();
                        printer.print(&json::stored_error(name, url.as_str(), &e));
                    }
                    printer.fail();
                }
            }
            if printer.broken() {
                break;
            }
        }
    }
    printer.finish()
}

/// The lines of one object's values, and the messages of those that check nothing.
fn print_object(printer: &Printer, object: &StoredObject, settings: &StoredSettings) {
    let values = stored::values(object);
    let name = object.name.as_bytes();
    let terminator = settings.terminator;
    for value in &values {
        match value {
            _ if settings.json => printer.print(&json::stored_value(object, value)),
            Ok(v) => printer.print(&sumfile::format_line(
                Format::Tag,
                terminator,
                v.layout,
                v.algorithm,
                &v.expected,
                name,
            )),
            Err(no) => {
                // A comment holds no line break: the name escaped as in a sum line (raw
                // with -z, whose lines end with NUL).
                let mut line = b"# ".to_vec();
                match terminator {
                    Terminator::Newline => line.extend_from_slice(&sumfile::escape_name(name)),
                    Terminator::Nul => line.extend_from_slice(name),
                }
                line.extend_from_slice(format!(": {no}").as_bytes());
                line.push(terminator.byte());
                printer.print(&line);
            }
        }
    }
    // An object that another value checks needs no message; one that none does is said.
    if !values.iter().any(Result::is_ok) {
        let why: Vec<String> = values
            .iter()
            .filter_map(|v| v.as_ref().err())
            .map(|no| no.to_string())
            .collect();
        let cause = format!("no value to check a copy against: {}", why.join("; "));
        printer.message(&report::error_line(object.url.as_str().as_bytes(), &cause));
        printer.fail();
    }
}
