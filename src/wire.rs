//! The wire submission (`result_json`, v1) as far as the job engine needs it:
//! `v`, `seq`, `partial` and the nodes' optional deterministic ids. Full typed
//! validation of spans, nodes, edges and ambiguities belongs to the graph store.
use serde::Deserialize;

/// Largest `result_json` accepted in one submission.
pub const MAX_SUBMISSION_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Deserialize)]
struct Envelope {
    v: Option<u64>,
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default)]
    partial: Option<bool>,
    #[serde(default)]
    nodes: Vec<NodeEnvelope>,
}

#[derive(Debug, Deserialize)]
struct NodeEnvelope {
    #[serde(default)]
    id: Option<String>,
}

/// What routing a submission needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope1 {
    pub seq: u32,
    pub partial: bool,
    pub node_ids: Vec<Option<String>>,
}

/// Parses the envelope of a v1 submission; the error says what is wrong.
pub fn parse_envelope(bytes: &[u8]) -> Result<Envelope1, String> {
    if bytes.len() > MAX_SUBMISSION_BYTES {
        return Err(format!("result_json is {} bytes, over the limit of {MAX_SUBMISSION_BYTES}", bytes.len()));
    }
    // serde would also read a struct from a JSON array; the wire is an object.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err("result_json is not a v1 submission: expected a JSON object".into());
    }
    let env: Envelope = serde_json::from_slice(bytes).map_err(|e| format!("result_json is not a v1 submission: {e}"))?;
    match env.v {
        Some(1) => {}
        Some(v) => return Err(format!("v: unsupported version {v} (this core speaks 1)")),
        None => return Err("v: required".into()),
    }
    let seq = u32::try_from(env.seq.unwrap_or(0)).map_err(|_| "seq: out of range".to_string())?;
    let mut node_ids = Vec::with_capacity(env.nodes.len());
    for (i, n) in env.nodes.into_iter().enumerate() {
        match n.id {
            Some(id) if id.is_empty() || id.len() > 512 || id.chars().any(char::is_control) => {
                return Err(format!("nodes[{i}].id: must be 1..=512 bytes without control characters"));
            }
            other => node_ids.push(other),
        }
    }
    Ok(Envelope1 { seq, partial: env.partial.unwrap_or(false), node_ids })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_parse_with_defaults() {
        let e = parse_envelope(br#"{"v":1,"canonicalText":"x","nodes":[{"labels":["A"]},{"id":"p:1","labels":["B"]}]}"#).unwrap();
        assert_eq!(e, Envelope1 { seq: 0, partial: false, node_ids: vec![None, Some("p:1".into())] });
        let e = parse_envelope(br#"{"v":1,"seq":3,"partial":true}"#).unwrap();
        assert_eq!((e.seq, e.partial), (3, true));
    }

    #[test]
    fn malformed_envelopes_say_why() {
        assert!(parse_envelope(b"not json").unwrap_err().contains("not a v1 submission"));
        assert!(parse_envelope(b"[1,2]").unwrap_err().contains("not a v1 submission"));
        assert!(parse_envelope(br#"{"canonicalText":""}"#).unwrap_err().starts_with("v:"));
        assert!(parse_envelope(br#"{"v":2}"#).unwrap_err().contains("unsupported version 2"));
        assert!(parse_envelope(br#"{"v":1,"seq":-1}"#).is_err());
        assert!(parse_envelope(br#"{"v":1,"seq":99999999999}"#).unwrap_err().starts_with("seq"));
        assert!(parse_envelope(br#"{"v":1,"nodes":[{"id":""}]}"#).unwrap_err().starts_with("nodes[0].id"));
        assert!(parse_envelope(br#"{"v":1,"partial":"yes"}"#).is_err());
    }
}
