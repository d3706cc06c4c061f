//! `-c`: verify the files listed in sum files. The library's [`mtsum::check`] does the work
//! and prints the verdicts; this mode only runs it above the progress bar and turns its
//! answer into the exit status.

use mtsum::check;

use crate::args::{CheckSettings, Common};
use crate::session::{self, Status};

pub fn run(common: &Common, settings: &CheckSettings) -> Status {
    // The inputs are sum files: what they list is known only as they are read.
    let (engine, printer) = session::start(common, || None);
    let (mut out, mut err) = printer.writers();
    let targets = common.targets.clone();
    match check::check(&engine, targets, &settings.options, &mut out, &mut err) {
        Ok(true) => {}
        Ok(false) => printer.fail(),
        Err(e) => printer.stdout_failed(&e),
    }
    printer.finish()
}
