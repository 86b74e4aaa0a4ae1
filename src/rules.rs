//! The rules both sides of the wire enforce, as constants generated from
//! `proto/telha/v1/rules.json` (the one source; `workers_common` reads the same file
//! through its generated `wire_rules.py`): failure kinds and their default permanence,
//! the failure-reason cap, identifier, id and format-name syntax, per-submission caps.
//! The validator ([`crate::graph::validate`]) and the taxonomy ([`crate::failure`]) read
//! these; the parity test in `workers/common/tests/test_parity.py` checks both sides agree.
include!(concat!(env!("OUT_DIR"), "/rules.rs"));
