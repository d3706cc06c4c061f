//! The texts about mtsum itself: `--version`, which names the kernels this CPU runs (what a
//! bug report needs), and `--generate KIND`, the man page and the shell completions rendered
//! from the parser in `args` (as ripgrep does), so that they offer exactly the flags `--help`
//! lists and cannot drift from it. Packagers run `--generate` at build time
//! (scripts/deb.sh); the parts of the man page that no flag's help says (the modes, layouts,
//! exit status, environment, files, examples) are written here, once.

use std::io;

use clap::CommandFactory;
use clap_complete::Shell;
use mtsum::Algorithm;
use mtsum::lanes::Kernel;

use crate::args::{Args, GenerateKind as Kind};

/// `mtsum 0.2.0 (md5: avx512-16x2; sha1: ni-x4; sha256: ni-x2; sha512: avx512-8x2; blake3:
/// avx512)`: the multi-buffer kernel of each family of algorithms, as `--verbose` names it
/// without the algorithm (sha224 and sha384 run those of sha256 and sha512), and BLAKE3's
/// instruction set; `portable` where none is chosen (no SIMD kernel on this CPU, or a cap of
/// MTSUM_SIMD that rules them out).
pub fn version() -> String {
    let families = [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha256,
        Algorithm::Sha512,
    ];
    let mut kernels: Vec<String> = families
        .iter()
        .map(|&alg| {
            let name = Kernel::multi_buffer(alg).map_or("portable", Kernel::name);
            let short = name
                .strip_prefix(alg.name())
                .and_then(|n| n.strip_prefix('-'));
            format!("{}: {}", alg.name(), short.unwrap_or(name))
        })
        .collect();
    kernels.push(format!("blake3: {}", mtsum::batch::blake3_vector()));
    format!(
        "mtsum {} ({})\n",
        env!("CARGO_PKG_VERSION"),
        kernels.join("; ")
    )
}

/// The text of `kind`.
pub fn render(kind: Kind) -> String {
    let mut out = Vec::new();
    let written = match kind {
        Kind::Man => man_page(&mut out),
        Kind::CompleteBash => completion(Shell::Bash, &mut out),
        Kind::CompleteZsh => completion(Shell::Zsh, &mut out),
        Kind::CompleteFish => completion(Shell::Fish, &mut out),
        Kind::CompletePowershell => completion(Shell::PowerShell, &mut out),
    };
    written.expect("writing to a Vec does not fail");
    String::from_utf8(out).expect("clap's texts and ours are UTF-8")
}

fn completion(shell: Shell, out: &mut Vec<u8>) -> io::Result<()> {
    clap_complete::generate(shell, &mut Args::command(), "mtsum", out);
    Ok(())
}

/// clap_mangen's sections (name, synopsis, description, options), then ours, then the version.
fn man_page(out: &mut Vec<u8>) -> io::Result<()> {
    let man = clap_mangen::Man::new(Args::command().override_usage(SYNOPSIS));
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    out.extend_from_slice(MAN_SECTIONS.as_bytes());
    man.render_version_section(out)
}

/// The forms of the command, one per mode, for the man page: clap's own synopsis would list
/// every flag in one line.
const SYNOPSIS: &str = "\
mtsum [-p N] [-a ALG] [-t LAYOUT] [-l SIZE | --part-size SIZE] [-r [-L]] [--base64] \
[--tag | -z | --json | -g | --no-names] [PATH...]
mtsum -c [--quiet | --status | --warn] [--strict] [--ignore-missing] [--json] [-t LAYOUT] \
[-a ALG] [--part-size SIZE|auto] SUMFILE...
mtsum --audit [--manifest FILE | --db FILE] [--update | --fix | --forget | --export FILE | \
--import FILE] [-r] PATH...
mtsum --repair FILE --from COPY --db DB
mtsum --compare [--one-way] [--size-only] [--read-remote[=all]] [--quiet] [--json] LOCAL REMOTE
mtsum --stored s3://BUCKET/PREFIX/...
mtsum [-a ALG] [-t LAYOUT] [-l SIZE | --part-size SIZE] --plan N FILE | --range START-END/SIZE FILE
mtsum --combine [--tag | -z | --no-names] [--base64] PARTIALS...
mtsum --generate man|complete-bash|complete-zsh|complete-fish|complete-powershell";

/// The man page's sections beyond the options, in roff.
const MAN_SECTIONS: &str = r#".SH MODES
.TP
\fBmtsum\fR [\fIOPTIONS\fR] [\fIPATH\fR...]
Hash each PATH (a file, an \fBs3://\fR or \fBhttp(s)://\fR URL; standard input when there is
none, or for \fB\-\fR) and print one line
\fIDIGEST\fR\ \ \fINAME\fR per input, in command-line order, as \fBsha256sum\fR(1) does.
A file is cut into leaves that every core hashes; the root depends only on the bytes and the
layout (\fB\-t\fR), never on \fB\-p\fR. With \fB\-r\fR, the files below directories.
.TP
\fBmtsum \-c\fR [\fIOPTIONS\fR] \fISUMFILE\fR...
Read checksum lines (mtsum's, coreutils' \fB*sum\fR, \fBb3sum\fR, \fBxxhsum\fR, BSD tags) and
verify the files they list, printing \fINAME\fR: OK or FAILED.
.TP
\fBmtsum \-\-audit\fR [\fB\-\-manifest\fR \fIFILE\fR | \fB\-\-db\fR \fIFILE\fR] [\fB\-r\fR] \fIPATH\fR...
Record each file's digest, size and modification time (in the extended attribute
\fBuser.mtsum\fR, a manifest or a SQLite database), and on later runs tell bit rot
(\fBcorrupt\fR: same size and mtime, another digest) from an edit (\fBmodified\fR). One line
\fISTATUS\fR\ \ \fINAME\fR per file, a summary on standard error.
.TP
\fBmtsum \-\-repair\fR \fIFILE\fR \fB\-\-from\fR \fICOPY\fR \fB\-\-db\fR \fIDB\fR
Rewrite only the leaves of a corrupt FILE that its database records locate as damaged,
from a copy whose every leaf is checked first.
.TP
\fBmtsum \-\-compare\fR [\fIOPTIONS\fR] \fILOCAL\fR \fIREMOTE\fR
Compare a directory with an \fBs3://\fR prefix (or another directory): one line
\fISTATUS\fR\ \ \fINAME\fR per file (\fBok\fR, \fBdiffers\fR, \fBonly\-local\fR,
\fBonly\-remote\fR, \fBunverified\fR, \fBunreadable\fR), reading only the local files where
the store reports a value that vouches for the object (a checksum, the ETag with its part size).
.TP
\fBmtsum \-\-stored\fR \fBs3://\fR\fIBUCKET\fR/\fIPREFIX\fR/...
Print, reading no object's bytes, a sum file of the values the store keeps for each object
below the prefix (its ETag and checksums, with the part size the store tells), named relative
to the prefix, so that \fBmtsum \-c\fR in a local copy checks it.
.TP
\fBmtsum \-\-plan\fR \fIN\fR | \fB\-\-range\fR \fISTART\-END/SIZE\fR | \fB\-\-combine\fR
Hash one file in ranges anywhere (other machines, a batch system) and join the partial lines
into the root that a local run prints.
.SH LAYOUTS
.TP
\fBmtsum\fR
The tree of C++ mtsum 1.1.0 (the default): halves down to leaves of at most 128 MiB.
.TP
\fBplain\fR
The ordinary digest, identical to \fBsha256sum\fR, \fBmd5sum\fR, \fBb3sum\fR, \fBxxhsum\fR.
.TP
\fBmerkle\fR, \fBrfc6962\fR
Binary trees over leaves of \fB\-l\fR bytes (RFC 6962: Certificate Transparency's hash).
.TP
\fBs3\fR, \fBglacier\fR, \fBdropbox\fR, \fBbtv2\fR
The values storage systems report: S3's multipart ETag and composite checksums
(\fB\-\-part\-size\fR), Glacier's tree hash, Dropbox's content_hash, BitTorrent v2's pieces root.
.SH "EXIT STATUS"
.TP
\fB0\fR
Every input was hashed (with \fB\-c\fR: every file checked out; with \fB\-\-audit\fR: nothing
corrupt or unreadable).
.TP
\fB1\fR
An input failed: it could not be read, did not check out, or was found corrupt.
.TP
\fB2\fR
A usage error (or a fatal error of the audit's store).
.SH ENVIRONMENT
.TP
\fBMTSUM_SIMD\fR
Caps the SIMD instruction sets the kernels may use: \fBportable\fR, \fBavx2\fR, \fBavx512\fR,
\fBavx2\-nosha\fR, \fBavx512\-nosha\fR (without SHA-NI). Unset or empty: whatever the CPU has.
\fBmtsum \-\-version\fR names the kernels chosen.
.TP
\fBMTSUM_FORCE_PORTABLE\fR
Any value but empty or \fB0\fR: no SIMD kernel at all, as \fBMTSUM_SIMD=portable\fR.
.TP
\fBMTSUM_ROTATIONAL\fR
\fB1\fR or \fB0\fR: whether the audit treats every disk as rotational (one reader, in the
order of the disk) or not, instead of what sysfs says.
.TP
\fBAWS_ACCESS_KEY_ID\fR, \fBAWS_SECRET_ACCESS_KEY\fR, \fBAWS_SESSION_TOKEN\fR, \fBAWS_REGION\fR, \fBAWS_ENDPOINT_URL\fR, \fBAWS_PROFILE\fR, \fBAWS_SHARED_CREDENTIALS_FILE\fR, \fBAWS_CONFIG_FILE\fR, \fBAWS_WEB_IDENTITY_TOKEN_FILE\fR
Credentials, region, endpoint and profile of \fBs3://\fR operands, as the AWS CLI reads
them (\fB\-\-profile\fR and \fB\-\-endpoint\-url\fR take precedence).
.TP
\fBAWS_CA_BUNDLE\fR
The certificates that \fBhttps://\fR and \fBs3://\fR servers are checked against instead of
the system's, for a private CA (\fB\-\-ca\-bundle\fR takes precedence).
.SH FILES
.TP
\fI~/.aws/credentials\fR, \fI~/.aws/config\fR
The static keys, region and endpoint of the AWS profile, for \fBs3://\fR operands.
.TP
extended attribute \fBuser.mtsum\fR
Where \fB\-\-audit\fR keeps a file's record unless \fB\-\-manifest\fR or \fB\-\-db\fR is given.
.TP
\fIFILE\fR of \fB\-\-manifest\fR, \fB\-\-db\fR
A manifest (one record per line) or a SQLite database of the audit's records.
.SH EXAMPLES
.TP
\fBmtsum \-t plain *.iso > SHA256SUMS\fR
What \fBsha256sum\fR writes, hashed on every core where the algorithm allows it.
.TP
\fBmtsum \-c \-t plain SHA256SUMS\fR
Check the files listed (also a file \fBsha256sum\fR wrote); without \fB\-t plain\fR an
untagged line is taken for the default tree layout.
.TP
\fBmtsum \-t s3 \-\-part\-size 16M big.tar\fR
The ETag S3 reports for an upload in 16 MiB parts.
.TP
\fBmtsum \-\-audit \-r /srv/data\fR
Record every file on the first run; report corrupt files on later ones.
.TP
\fBmtsum \-\-generate complete\-bash > /usr/share/bash\-completion/completions/mtsum\fR
Install the bash completion (also \fBcomplete\-zsh\fR, \fBcomplete\-fish\fR,
\fBcomplete\-powershell\fR, and \fBman\fR for this page).
"#;
