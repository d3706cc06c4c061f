//! Walking the command line's paths: files, standard input, and directories with `-r`.
//!
//! (Being written.)
