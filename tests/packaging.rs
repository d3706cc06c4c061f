//! What a package ships besides the binary, as a user meets it: `mtsum --version` (the
//! version and the kernels, for bug reports), the man page and the shell completions of
//! `mtsum --generate`, which must offer the flags `--help` lists, and the bash completion
//! working in a real bash.

mod common;

use std::process::Command;

use common::run::{Run, run_cmd};
use common::{MTSUM, skip};

/// `mtsum ARGS` with `env` added to the environment; the variables the kernels are chosen
/// under are removed first, so that the machine's settings do not leak in.
fn mtsum(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = assert_cmd::Command::new(MTSUM);
    cmd.args(args)
        .env_remove("MTSUM_SIMD")
        .env_remove("MTSUM_FORCE_PORTABLE");
    cmd.envs(env.iter().copied());
    run_cmd(&mut cmd)
}

/// The standard output of a run that must succeed with nothing on stderr.
fn stdout_of(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = mtsum(args, env);
    assert_eq!((out.code, out.stderr()), (Some(0), ""), "mtsum {args:?}");
    out.stdout().to_string()
}

/// The kernel `--version` names for `family`: `ni-x2` of `sha256: ni-x2`.
fn version_kernel(version: &str, family: &str) -> String {
    let inside = version
        .split_once(" (")
        .and_then(|(_, rest)| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("no kernels in {version:?}"));
    let entry = inside
        .split("; ")
        .find_map(|entry| entry.strip_prefix(&format!("{family}: ")));
    entry
        .unwrap_or_else(|| panic!("no {family} in {version:?}"))
        .to_string()
}

#[test]
fn version_flags_print_the_version_then_the_kernels_of_each_family() {
    let expected_start = format!("mtsum {} (", env!("CARGO_PKG_VERSION"));
    for flag in ["--version", "-V", "-v"] {
        let version = stdout_of(&[flag], &[]);
        assert!(version.starts_with(&expected_start), "{version:?}");
        for family in ["md5", "sha1", "sha256", "sha512", "blake3"] {
            assert!(!version_kernel(&version, family).is_empty(), "{family}");
        }
    }
}

#[test]
fn version_names_the_kernel_that_verbose_hashing_uses() {
    // The same kernel under its full name: `Multi-buffer kernel: sha256-ni-x2`.
    let dir = common::tempdir();
    let file = common::write_file(dir.path(), "f", b"abc");
    let file = file.to_str().expect("a UTF-8 temporary path");
    let version = stdout_of(&["--version"], &[]);
    for family in ["md5", "sha1", "sha256", "sha512"] {
        let out = mtsum(&["--verbose", "-a", family, file], &[]);
        let stderr = out.stderr();
        let verbose = stderr
            .lines()
            .find_map(|l| l.strip_prefix("Multi-buffer kernel: "))
            .unwrap_or_else(|| panic!("no kernel line in {stderr:?}"));
        let named = match version_kernel(&version, family) {
            portable if portable == "portable" => "none".to_string(),
            kernel => format!("{family}-{kernel}"),
        };
        assert_eq!(named, verbose, "{family}");
    }
}

#[test]
fn version_under_a_portable_cap_names_no_simd_kernel() {
    for env in [("MTSUM_SIMD", "portable"), ("MTSUM_FORCE_PORTABLE", "1")] {
        let version = stdout_of(&["--version"], &[env]);
        for family in ["md5", "sha1", "sha256", "sha512", "blake3"] {
            assert_eq!(version_kernel(&version, family), "portable", "{env:?}");
        }
    }
}

/// Every long flag `--help` lists: `--audit`, `--part-size`, ...
fn long_flags() -> Vec<String> {
    let help = stdout_of(&["--help"], &[]);
    let mut flags: Vec<String> = help
        .lines()
        .map(str::trim_start)
        .filter_map(|l| {
            let at = l.find("--")?;
            // The option's own line starts with it (`-c, --check`, `--audit`).
            (at <= 4).then(|| {
                let flag = &l[at..];
                flag.split([' ', ',', '=', '['])
                    .next()
                    .unwrap_or(flag)
                    .to_string()
            })
        })
        .collect();
    flags.dedup();
    assert!(flags.len() > 40, "too few flags in --help: {flags:?}");
    flags
}

#[test]
fn the_man_page_has_the_sections_a_user_looks_for_and_every_flag() {
    let page = stdout_of(&["--generate", "man"], &[]);
    assert!(
        page.starts_with(".ie") || page.starts_with(".TH"),
        "not roff"
    );
    assert!(page.contains(&format!("mtsum {}", env!("CARGO_PKG_VERSION"))));
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "MODES",
        "LAYOUTS",
        "\"EXIT STATUS\"",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
    ] {
        assert!(page.contains(&format!("\n.SH {section}\n")), "{section}");
    }
    for variable in [
        "MTSUM_SIMD",
        "MTSUM_FORCE_PORTABLE",
        "MTSUM_ROTATIONAL",
        "AWS_PROFILE",
        "AWS_CA_BUNDLE",
    ] {
        assert!(page.contains(&format!("\\fB{variable}\\fR")), "{variable}");
    }
    for flag in long_flags() {
        // roff escapes each hyphen: `\-\-part\-size`.
        let roff = flag.replace('-', "\\-");
        assert!(page.contains(&roff), "{flag} is not in the man page");
    }
}

/// The man page as a reader sees its words: roff's font changes and hyphen escapes undone.
fn man_page_words() -> String {
    let page = stdout_of(&["--generate", "man"], &[]);
    ["\\fB", "\\fI", "\\fR"]
        .iter()
        .fold(page, |text, font| text.replace(font, ""))
        .replace("\\-", "-")
}

#[test]
fn every_form_of_range_in_the_man_page_takes_a_line_of_plan() {
    // `--range` takes what `--plan` prints, `START-END/SIZE`; a form without the size is
    // refused, so the synopsis and the modes must not show one.
    let page = man_page_words();
    let forms: Vec<&str> = page
        .match_indices("--range ")
        .filter_map(|(at, flag)| {
            let value = page[at + flag.len()..].split_whitespace().next()?;
            let value = value.trim_start_matches('<').trim_end_matches('>');
            value.starts_with("START").then_some(value)
        })
        .collect();
    assert!(forms.len() >= 3, "synopsis, options and modes: {forms:?}");
    assert!(forms.iter().all(|f| *f == "START-END/SIZE"), "{forms:?}");
}

/// The text of the man page's section `name`, as [`man_page_words`] gives it.
fn man_section(page: &str, name: &str) -> String {
    let start = format!("\n.SH {name}\n");
    let rest = page
        .split(&start)
        .nth(1)
        .unwrap_or_else(|| panic!("no {name}"));
    rest.split("\n.SH ").next().unwrap_or(rest).to_string()
}

#[test]
fn every_mode_has_a_form_in_the_synopsis_and_an_entry_among_the_modes() {
    // The flags that choose what a run does; each one a user should find in both places.
    let page = man_page_words();
    let synopsis = man_section(&page, "SYNOPSIS");
    let modes = man_section(&page, "MODES");
    for mode in [
        "-c",
        "--audit",
        "--repair",
        "--compare",
        "--stored",
        "--plan",
        "--range",
        "--combine",
    ] {
        let used = |text: &str| text.split_whitespace().any(|word| word == mode);
        assert!(used(&synopsis), "{mode} has no form in the synopsis");
        assert!(used(&modes), "{mode} is not among the modes");
    }
}

#[test]
fn the_man_pages_examples_of_writing_and_checking_sums_check_out() {
    let page = man_page_words();
    let examples = man_section(&page, "EXAMPLES");
    let commands: Vec<&str> = examples
        .lines()
        .filter_map(|l| l.strip_prefix("mtsum "))
        .collect();
    let write = commands.iter().find(|c| c.contains("> SHA256SUMS"));
    let check = commands.iter().find(|c| c.starts_with("-c "));
    let (write, check) = write
        .zip(check)
        .expect("an example that writes sums, one that checks them");
    let dir = common::tempdir();
    common::write_file(dir.path(), "a.iso", &common::pattern(3 << 20, 1));
    common::write_file(dir.path(), "b.iso", b"b");
    let run = |args: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("\"$0\" {args}"))
            .arg(MTSUM)
            .current_dir(dir.path())
            .output()
            .expect("sh runs")
    };
    assert_eq!(run(write).status.code(), Some(0), "{write}");
    let out = run(check);
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).as_ref()
        ),
        (Some(0), "a.iso: OK\nb.iso: OK\n"),
        "{check}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_completion_offers_every_flag_of_help() {
    let flags = long_flags();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = stdout_of(&["--generate", &format!("complete-{shell}")], &[]);
        for flag in &flags {
            // fish lists long options without their dashes: `-l part-size`.
            let found = match shell {
                "fish" => script.contains(&format!("-l {}", &flag[2..])),
                _ => script.contains(flag.as_str()),
            };
            assert!(found, "{flag} is not in the {shell} completion");
        }
    }
}

#[test]
fn generate_takes_no_other_argument_and_refuses_an_unknown_kind() {
    for args in [
        &["--generate", "man", "file"][..],
        &["--generate", "man", "-r"],
        &["--generate", "complete-tcsh"],
    ] {
        let out = mtsum(args, &[]);
        let stderr = out.stderr();
        assert_eq!(out.code, Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    }
}

/// What bash offers on `<TAB>` after `words` (the last one the word being completed), with
/// the completion of `--generate complete-bash` sourced: the function it registers, called
/// as bash calls it. `None` where bash is not installed.
fn bash_completes(words: &[&str]) -> Option<Vec<String>> {
    if Command::new("bash").arg("-c").arg("true").output().is_err() {
        return None;
    }
    let script = stdout_of(&["--generate", "complete-bash"], &[]);
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let session = format!(
        "{script}\n\
         COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE={line:?}; COMP_POINT={point}\n\
         _mtsum mtsum {cur} {prev}\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = quoted.join(" "),
        cword = words.len() - 1,
        line = words.join(" "),
        point = words.join(" ").len(),
        cur = quoted[words.len() - 1],
        prev = quoted[words.len().saturating_sub(2)],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &session])
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{words:?}: {stderr}");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 replies");
    Some(stdout.lines().map(str::to_string).collect())
}

#[test]
fn the_bash_completion_registers_for_mtsum_and_completes_a_flag_prefix() {
    if Command::new("bash").arg("-c").arg("true").output().is_err() {
        return skip("bash_completion", "bash is not installed");
    }
    let script = stdout_of(&["--generate", "complete-bash"], &[]);
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c"])
        .arg(format!("{script}\ncomplete -p mtsum"))
        .output()
        .expect("bash runs");
    let registered = String::from_utf8_lossy(&out.stdout);
    assert!(
        registered.starts_with("complete ") && registered.trim_end().ends_with(" mtsum"),
        "{registered}"
    );
    assert!(registered.contains("-F _mtsum"), "{registered}");
    assert_eq!(bash_completes(&["mtsum", "--aud"]).unwrap(), ["--audit"]);
    assert_eq!(
        bash_completes(&["mtsum", "--generate", ""]).unwrap(),
        [
            "man",
            "complete-bash",
            "complete-zsh",
            "complete-fish",
            "complete-powershell"
        ]
    );
}

#[test]
fn the_bash_completion_offers_the_names_of_layouts_and_algorithms() {
    let Some(layouts) = bash_completes(&["mtsum", "-t", ""]) else {
        return skip("bash_completion", "bash is not installed");
    };
    assert_eq!(layouts, mtsum::layout::NAMES);
    let algorithms = bash_completes(&["mtsum", "-a", "sha2"]).unwrap();
    assert_eq!(algorithms, ["sha224", "sha256"]);
    let all = bash_completes(&["mtsum", "-t", "plain", "-a", ""]).unwrap();
    assert_eq!(all, mtsum::Algorithm::ALL.map(mtsum::Algorithm::name));
}
