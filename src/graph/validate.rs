//! Validation of a parsed submission, all of it, before any of it is applied:
//! offsets on UTF-8 boundaries inside this partial's slice of the text, refs in
//! range, labels and edge types well-formed, ids well-formed, confidences in
//! [0, 1], sizes within `[graph]` caps. The first problem found is the reason.
use std::collections::{BTreeSet, HashSet};

use base64::Engine;
use serde_json::value::RawValue;
use serde_json::Value;

use super::wire::{Interval, Submission, WireError};

/// Per-submission limits: `[graph]` in supervisor.toml (the config owns them and their defaults).
pub use crate::config::GraphCaps as Caps;

/// Longest node id, worker-given or referenced (rules.json).
pub const MAX_NODE_ID_BYTES: usize = crate::rules::MAX_NODE_ID_BYTES;
/// Longest label, edge type, span kind or ambiguity kind (rules.json).
pub const MAX_IDENT_BYTES: usize = crate::rules::MAX_IDENT_BYTES;
/// Longest child job name, as for client-submitted jobs (rules.json).
pub const MAX_CHILD_NAME_BYTES: usize = crate::rules::MAX_CHILD_NAME_BYTES;

/// What validation produced beyond "valid": the decoded content of each child job.
#[derive(Debug, Default)]
pub struct Checked {
    pub child_contents: Vec<Option<Vec<u8>>>,
}

/// Whether `id` has the form the core uses for the ids it assigns (`n<decimal>`,
/// rules.json `core_id_pattern`);
/// workers may reference such ids but not give them.
pub fn is_core_id(id: &str) -> bool {
    id.len() > 1 && id.starts_with('n') && id[1..].bytes().all(|b| b.is_ascii_digit())
}

/// rules.json `identifier_pattern` (`[A-Za-z][A-Za-z0-9_]*`), at most [`MAX_IDENT_BYTES`].
pub fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    s.len() <= MAX_IDENT_BYTES && b.next().is_some_and(|c| c.is_ascii_alphabetic()) && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

fn check_id(path: &str, id: &str) -> Result<(), WireError> {
    if id.is_empty() || id.len() > MAX_NODE_ID_BYTES || id.chars().any(char::is_control) {
        return Err(WireError::field(path, format!("must be 1..={MAX_NODE_ID_BYTES} bytes without control characters")));
    }
    Ok(())
}

fn check_text(path: &str, s: &str, max: usize) -> Result<(), WireError> {
    if s.is_empty() || s.len() > max || s.chars().any(char::is_control) {
        return Err(WireError::field(path, format!("must be 1..={max} bytes without control characters")));
    }
    Ok(())
}

fn check_object(path: &str, v: &Option<Value>) -> Result<(), WireError> {
    let kind = match v {
        None | Some(Value::Object(_)) => return Ok(()),
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
    };
    Err(WireError::field(path, format!("must be a JSON object, not {kind}")))
}

fn check_raw_object(path: &str, v: &Option<Box<RawValue>>) -> Result<(), WireError> {
    // Raw text the parser accepted as one JSON value: its first byte says its kind.
    let kind = match v.as_ref().and_then(|raw| raw.get().trim_start().bytes().next()) {
        None | Some(b'{') => return Ok(()),
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(_) => "a number",
    };
    Err(WireError::field(path, format!("must be a JSON object, not {kind}")))
}

fn check_interval(path: &str, i: &Interval) -> Result<(), WireError> {
    match i.valid_to {
        Some(to) if to <= i.valid_from => Err(WireError::field(path, format!("validTo ({to}) must be after validFrom ({})", i.valid_from))),
        _ => Ok(()),
    }
}

fn cap(what: &'static str, key: &'static str, count: usize, max: usize) -> Result<(), WireError> {
    if count > max {
        return Err(WireError::Cap { what, count, max, key });
    }
    Ok(())
}

/// Validates `sub`, whose text starts at global byte offset `base` (the accumulated
/// length of the partials before it). `formats` are the formats a child job may have.
pub fn validate(sub: &Submission, base: u64, caps: &Caps, formats: &BTreeSet<String>) -> Result<Checked, WireError> {
    let text = sub.canonical_text.as_bytes();
    cap("canonicalText bytes", "max_text_bytes", text.len(), caps.max_text_bytes)?;
    cap("spans", "max_spans", sub.spans.len(), caps.max_spans)?;
    cap("nodes", "max_nodes", sub.nodes.len(), caps.max_nodes)?;
    cap("relationships", "max_relationships", sub.relationships.len(), caps.max_relationships)?;
    cap("childJobs", "max_child_jobs", sub.child_jobs.len(), caps.max_child_jobs)?;
    cap("ambiguities", "max_ambiguities", sub.ambiguities.len(), caps.max_ambiguities)?;

    let end_of_text = base.saturating_add(text.len() as u64);
    let boundary = |off: u64| -> bool {
        // Offsets are global; `off - base` indexes this partial's slice.
        usize::try_from(off - base).is_ok_and(|local| sub.canonical_text.is_char_boundary(local))
    };
    for (i, s) in sub.spans.iter().enumerate() {
        let path = format!("spans[{i}]");
        if s.start > s.end {
            return Err(WireError::field(path, format!("start {} is after end {}", s.start, s.end)));
        }
        if s.start == s.end && !crate::rules::SPANS_MAY_BE_EMPTY {
            return Err(WireError::field(path, format!("[{}, {}) is empty: a span covers at least one byte", s.start, s.end)));
        }
        if s.start < base || s.end > end_of_text {
            return Err(WireError::field(path, format!("[{}, {}) is outside this submission's text [{base}, {end_of_text})", s.start, s.end)));
        }
        if !boundary(s.start) || !boundary(s.end) {
            return Err(WireError::field(path, format!("[{}, {}) does not fall on UTF-8 character boundaries", s.start, s.end)));
        }
        if s.kind.len() > MAX_IDENT_BYTES || s.kind.chars().any(char::is_control) {
            return Err(WireError::field(format!("{path}.kind"), format!("must be at most {MAX_IDENT_BYTES} bytes without control characters")));
        }
    }

    let mut given_ids: HashSet<&str> = HashSet::new();
    for (i, n) in sub.nodes.iter().enumerate() {
        if n.labels.is_empty() {
            return Err(WireError::field(format!("nodes[{i}].labels"), "a node needs at least one label"));
        }
        if n.labels.len() > caps.max_labels_per_node {
            return Err(WireError::field(format!("nodes[{i}].labels"), format!("{} is over the limit of {} per node ([graph].max_labels_per_node)", n.labels.len(), caps.max_labels_per_node)));
        }
        let mut seen: HashSet<&str> = HashSet::with_capacity(n.labels.len());
        for (j, l) in n.labels.iter().enumerate() {
            if !is_identifier(l) {
                return Err(WireError::field(format!("nodes[{i}].labels[{j}]"), format!("{:?} is not an identifier ([A-Za-z][A-Za-z0-9_]*, at most {MAX_IDENT_BYTES} bytes)", short(l))));
            }
            if !seen.insert(l) {
                return Err(WireError::field(format!("nodes[{i}].labels[{j}]"), format!("duplicate label {l:?}")));
            }
        }
        check_raw_object(&format!("nodes[{i}].properties"), &n.properties)?;
        // Counted before the entries are read: the check is one comparison per node.
        if n.span_refs.len() > caps.max_span_refs_per_node {
            return Err(WireError::field(format!("nodes[{i}].spanRefs"), format!("{} is over the limit of {} per node ([graph].max_span_refs_per_node)", n.span_refs.len(), caps.max_span_refs_per_node)));
        }
        for (j, r) in n.span_refs.iter().enumerate() {
            if *r >= sub.spans.len() as u64 {
                return Err(WireError::field(format!("nodes[{i}].spanRefs[{j}]"), format!("{r} is out of range (this submission has {} spans)", sub.spans.len())));
            }
        }
        if let Some(id) = &n.id {
            let path = format!("nodes[{i}].id");
            check_id(&path, id)?;
            if is_core_id(id) {
                return Err(WireError::field(path, format!("{id:?} has the form of a core-assigned id (n<digits>), which workers may not give")));
            }
            if !given_ids.insert(id) {
                return Err(WireError::field(path, format!("{:?} is given to two nodes of this submission", short(id))));
            }
        }
        if let Some(vt) = &n.valid_time {
            check_interval(&format!("nodes[{i}].validTime"), vt)?;
        }
    }

    let nodes = sub.nodes.len() as u64;
    for (i, r) in sub.relationships.iter().enumerate() {
        if !is_identifier(&r.kind) {
            return Err(WireError::field(format!("relationships[{i}].type"), format!("{:?} is not an identifier ([A-Za-z][A-Za-z0-9_]*)", short(&r.kind))));
        }
        for (end, by_ref, by_id) in [("from", r.from_ref, &r.from_id), ("to", r.to_ref, &r.to_id)] {
            match (by_ref, by_id) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(WireError::field(format!("relationships[{i}]"), format!("give exactly one of {end}Ref and {end}Id")));
                }
                (Some(x), None) if x >= nodes => {
                    return Err(WireError::field(format!("relationships[{i}].{end}Ref"), format!("{x} is out of range (this submission has {nodes} nodes)")));
                }
                (None, Some(id)) => check_id(&format!("relationships[{i}].{end}Id"), id)?,
                _ => {}
            }
        }
        check_raw_object(&format!("relationships[{i}].properties"), &r.properties)?;
    }

    if let Some(h) = &sub.content_hash {
        if !(32..=128).contains(&h.len()) || !h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(WireError::field("contentHash", "must be 32..=128 lowercase hex digits"));
        }
    }

    let mut names: HashSet<&str> = HashSet::new();
    let mut child_contents = Vec::with_capacity(sub.child_jobs.len());
    for (i, c) in sub.child_jobs.iter().enumerate() {
        if !formats.contains(&c.format) {
            return Err(WireError::field(format!("childJobs[{i}].format"), format!("unknown format {:?}", short(&c.format))));
        }
        check_text(&format!("childJobs[{i}].name"), &c.name, MAX_CHILD_NAME_BYTES)?;
        if !names.insert(&c.name) {
            return Err(WireError::field(format!("childJobs[{i}].name"), format!("{:?} appears twice in this submission", short(&c.name))));
        }
        check_object(&format!("childJobs[{i}].options"), &c.options)?;
        child_contents.push(match &c.content_b64 {
            None => None,
            Some(b64) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| WireError::field(format!("childJobs[{i}].contentB64"), format!("not base64: {e}")))?,
            ),
        });
    }

    for (i, a) in sub.ambiguities.iter().enumerate() {
        if a.node_ref >= nodes {
            return Err(WireError::field(format!("ambiguities[{i}].nodeRef"), format!("{} is out of range (this submission has {nodes} nodes)", a.node_ref)));
        }
        check_text(&format!("ambiguities[{i}].kind"), &a.kind, MAX_IDENT_BYTES)?;
        if a.candidates.is_empty() {
            return Err(WireError::field(format!("ambiguities[{i}].candidates"), "needs at least one candidate"));
        }
        for (j, c) in a.candidates.iter().enumerate() {
            check_text(&format!("ambiguities[{i}].candidates[{j}].label"), &c.label, MAX_CHILD_NAME_BYTES)?;
            check_interval(&format!("ambiguities[{i}].candidates[{j}]"), &Interval { valid_from: c.valid_from, valid_to: c.valid_to })?;
        }
        for (field, v) in [("detectorConfidence", a.detector_confidence), ("appliedCandidateConfidence", a.applied_candidate_confidence)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(WireError::field(format!("ambiguities[{i}].{field}"), format!("{v} is outside [0, 1]")));
            }
        }
        if let Some(s) = &a.severity_hint {
            check_text(&format!("ambiguities[{i}].severityHint"), s, MAX_IDENT_BYTES)?;
        }
    }
    Ok(Checked { child_contents })
}

fn short(s: &str) -> &str {
    crate::failure::truncate_utf8(s, 64)
}

#[cfg(test)]
mod tests {
    use super::super::wire::parse;
    use super::*;

    fn check(json: &str, base: u64) -> Result<Checked, WireError> {
        let formats: BTreeSet<String> = ["txt".to_string()].into();
        validate(&parse(json.as_bytes())?, base, &Caps::default(), &formats)
    }

    fn reason(json: &str) -> String {
        check(json, 0).unwrap_err().to_string()
    }

    #[test]
    fn valid_submissions_pass() {
        check(r#"{"v":1,"canonicalText":"héllo!","spans":[{"start":0,"end":6},{"start":6,"end":7}],"nodes":[{"labels":["A","B_2"],"spanRefs":[0,1],"id":"x:1"}],"relationships":[{"type":"R","fromRef":0,"toId":"n12"}]}"#, 0).unwrap();
        // A partial's offsets are global: its slice starts at `base`.
        check(r#"{"v":1,"seq":1,"canonicalText":"ab","spans":[{"start":10,"end":12}]}"#, 10).unwrap();
        let c = check(r#"{"v":1,"childJobs":[{"format":"txt","name":"a","contentB64":"aGk="},{"format":"txt","name":"b"}]}"#, 0).unwrap();
        assert_eq!(c.child_contents, vec![Some(b"hi".to_vec()), None]);
    }

    #[test]
    fn each_rule_names_its_field() {
        let cases = [
            (r#"{"v":1,"canonicalText":"ab","spans":[{"start":2,"end":1}]}"#, "spans[0]: start 2 is after end 1"),
            (r#"{"v":1,"canonicalText":"ab","spans":[{"start":0,"end":3}]}"#, "spans[0]: [0, 3) is outside"),
            (r#"{"v":1,"canonicalText":"ab","spans":[{"start":1,"end":1}]}"#, "spans[0]: [1, 1) is empty"),
            (r#"{"v":1,"canonicalText":"é","spans":[{"start":0,"end":1}]}"#, "spans[0]: [0, 1) does not fall on UTF-8"),
            (r#"{"v":1,"nodes":[{"labels":[]}]}"#, "nodes[0].labels: a node needs"),
            (r#"{"v":1,"nodes":[{"labels":["9x"]}]}"#, "nodes[0].labels[0]: \"9x\" is not an identifier"),
            (r#"{"v":1,"nodes":[{"labels":["A","A"]}]}"#, "nodes[0].labels[1]: duplicate"),
            (r#"{"v":1,"nodes":[{"labels":["A"],"properties":[1]}]}"#, "nodes[0].properties: must be a JSON object, not an array"),
            (r#"{"v":1,"nodes":[{"labels":["A"],"spanRefs":[0]}]}"#, "nodes[0].spanRefs[0]: 0 is out of range"),
            (r#"{"v":1,"nodes":[{"labels":["A"],"id":""}]}"#, "nodes[0].id: must be"),
            (r#"{"v":1,"nodes":[{"labels":["A"],"id":"n7"}]}"#, "nodes[0].id: \"n7\" has the form of a core-assigned id"),
            (r#"{"v":1,"nodes":[{"labels":["A"],"id":"a"},{"labels":["A"],"id":"a"}]}"#, "nodes[1].id: \"a\" is given to two nodes"),
            (r#"{"v":1,"nodes":[{"labels":["A"],"validTime":{"validFrom":5,"validTo":5}}]}"#, "nodes[0].validTime: validTo (5) must be after"),
            (r#"{"v":1,"nodes":[{"labels":["A"]}],"relationships":[{"type":"R-1","fromRef":0,"toRef":0}]}"#, "relationships[0].type"),
            (r#"{"v":1,"nodes":[{"labels":["A"]}],"relationships":[{"type":"R","fromRef":0,"fromId":"x","toRef":0}]}"#, "relationships[0]: give exactly one of fromRef and fromId"),
            (r#"{"v":1,"nodes":[{"labels":["A"]}],"relationships":[{"type":"R","fromRef":0}]}"#, "relationships[0]: give exactly one of toRef and toId"),
            (r#"{"v":1,"nodes":[{"labels":["A"]}],"relationships":[{"type":"R","fromRef":1,"toRef":0}]}"#, "relationships[0].fromRef: 1 is out of range"),
            (r#"{"v":1,"relationships":[{"type":"R","fromId":"a","toId":"b","properties":"x"}]}"#, "relationships[0].properties: must be a JSON object"),
            (r#"{"v":1,"contentHash":"XYZ"}"#, "contentHash: must be"),
            (r#"{"v":1,"childJobs":[{"format":"nope","name":"a"}]}"#, "childJobs[0].format: unknown format"),
            (r#"{"v":1,"childJobs":[{"format":"txt","name":""}]}"#, "childJobs[0].name: must be"),
            (r#"{"v":1,"childJobs":[{"format":"txt","name":"a"},{"format":"txt","name":"a"}]}"#, "childJobs[1].name: \"a\" appears twice"),
            (r#"{"v":1,"childJobs":[{"format":"txt","name":"a","contentB64":"!!"}]}"#, "childJobs[0].contentB64: not base64"),
            (r#"{"v":1,"nodes":[{"labels":["A"]}],"ambiguities":[{"nodeRef":1,"kind":"k","candidates":[{"label":"l","validFrom":0}],"detectorConfidence":0.5,"appliedCandidateConfidence":0.5}]}"#, "ambiguities[0].nodeRef: 1 is out of range"),
            (r#"{"v":1,"nodes":[{"labels":["A"]}],"ambiguities":[{"nodeRef":0,"kind":"k","candidates":[],"detectorConfidence":0.5,"appliedCandidateConfidence":0.5}]}"#, "ambiguities[0].candidates: needs at least one"),
            (r#"{"v":1,"nodes":[{"labels":["A"]}],"ambiguities":[{"nodeRef":0,"kind":"k","candidates":[{"label":"l","validFrom":0}],"detectorConfidence":1.5,"appliedCandidateConfidence":0.5}]}"#, "ambiguities[0].detectorConfidence: 1.5 is outside [0, 1]"),
        ];
        for (json, want) in cases {
            let got = reason(json);
            assert!(got.starts_with(want), "{json}\n  got:  {got}\n  want: {want}");
        }
    }

    #[test]
    fn a_partial_span_before_its_base_is_refused() {
        let e = check(r#"{"v":1,"seq":1,"canonicalText":"ab","spans":[{"start":0,"end":2}]}"#, 10).unwrap_err().to_string();
        assert!(e.starts_with("spans[0]: [0, 2) is outside this submission's text [10, 12)"), "{e}");
    }

    #[test]
    fn caps_are_enforced() {
        let formats = BTreeSet::new();
        let caps = Caps { max_nodes: 1, max_text_bytes: 3, ..Caps::default() };
        let s = parse(br#"{"v":1,"nodes":[{"labels":["A"]},{"labels":["A"]}]}"#).unwrap();
        assert!(matches!(validate(&s, 0, &caps, &formats), Err(WireError::Cap { key: "max_nodes", .. })));
        let s = parse(br#"{"v":1,"canonicalText":"abcd"}"#).unwrap();
        assert!(validate(&s, 0, &caps, &formats).unwrap_err().to_string().contains("[graph].max_text_bytes"));
    }
}
