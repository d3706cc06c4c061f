//! Sum files: the text formats mtsum writes, and reads back with `-c`.
//!
//! (Being written: see the module's tests for the grammar.)
