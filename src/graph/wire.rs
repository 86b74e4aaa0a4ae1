//! The wire submission (`result_json`, v1) as Rust types, parsed strictly: unknown
//! keys, wrong types and missing required fields are refused with the JSON path of
//! the offending value (`nodes[3].labels[0]: …`). Parsing says nothing about
//! offsets, refs or sizes; [`super::validate`] checks those before anything is applied.
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub use crate::config::MAX_SUBMISSION_BYTES;

/// Why a submission is malformed. The message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("result_json is {0} bytes, over the limit of {MAX_SUBMISSION_BYTES}")]
    TooLarge(usize),
    #[error("result_json is not a v1 submission: {0}")]
    NotJson(String),
    #[error("v: {0}")]
    Version(String),
    /// A field holds a value the wire does not allow: `path: message`.
    #[error("{path}: {message}")]
    Field { path: String, message: String },
    /// More of something than `[graph]` allows in one submission.
    #[error("{what}: {count} is over the limit of {max} per submission ([graph].{key})")]
    Cap { what: &'static str, count: usize, max: usize, key: &'static str },
}

impl WireError {
    pub fn field(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Field { path: path.into(), message: message.into() }
    }
}

/// One wire submission (or one partial of a streamed one), as sent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Submission {
    pub v: Option<u64>,
    #[serde(default)]
    pub seq: u32,
    #[serde(default)]
    pub partial: bool,
    /// Only this partial's slice of the canonical text.
    #[serde(default)]
    pub canonical_text: String,
    #[serde(default, deserialize_with = "objects")]
    pub spans: Vec<Span>,
    #[serde(default, deserialize_with = "objects")]
    pub nodes: Vec<Node>,
    #[serde(default, deserialize_with = "objects")]
    pub relationships: Vec<Relationship>,
    #[serde(default)]
    pub stats: Option<Map<String, Value>>,
    #[serde(default)]
    pub content_hash: Option<String>,
    #[serde(default, deserialize_with = "objects")]
    pub child_jobs: Vec<ChildJob>,
    #[serde(default, deserialize_with = "objects")]
    pub ambiguities: Vec<Ambiguity>,
}

/// A byte range of the accumulated canonical text (global offsets).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Node {
    pub labels: Vec<String>,
    /// Kept as raw JSON text: checked to be an object by validation (with a clear
    /// message rather than a serde type error) and made canonical once, node by node,
    /// by `apply::Encoded` (a parsed map per node would be most of a partial's memory).
    #[serde(default)]
    pub properties: Option<Box<RawValue>>,
    #[serde(default)]
    pub span_refs: Vec<u64>,
    /// A worker-given deterministic id: the node upserts on it.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "object")]
    pub valid_time: Option<Interval>,
}

/// A valid-time interval in Unix µs; `validTo` is exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Interval {
    pub valid_from: i64,
    #[serde(default)]
    pub valid_to: Option<i64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Relationship {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub from_ref: Option<u64>,
    #[serde(default)]
    pub from_id: Option<String>,
    #[serde(default)]
    pub to_ref: Option<u64>,
    #[serde(default)]
    pub to_id: Option<String>,
    #[serde(default)]
    pub properties: Option<Box<RawValue>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChildJob {
    pub format: String,
    pub name: String,
    #[serde(default)]
    pub options: Option<Value>,
    #[serde(default, rename = "contentB64")]
    pub content_b64: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ambiguity {
    pub node_ref: u64,
    pub kind: String,
    #[serde(deserialize_with = "objects")]
    pub candidates: Vec<Candidate>,
    pub detector_confidence: f64,
    pub applied_candidate_confidence: f64,
    #[serde(default)]
    pub severity_hint: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Candidate {
    pub label: String,
    pub valid_from: i64,
    #[serde(default)]
    pub valid_to: Option<i64>,
}

/// A struct read from a JSON object only. serde's derived structs also read a JSON
/// array as their fields in order (`[0, 3, "k"]` as a span); the wire is objects, so
/// this asks the deserializer for a map and hands the derived impl that map.
struct ObjectOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = ObjectOnly<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(ObjectOnly)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A list of structs, each a JSON object.
fn objects<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Vec::<ObjectOnly<T>>::deserialize(d)?.into_iter().map(|o| o.0).collect())
}

/// An optional struct, a JSON object when present.
fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Ok(Option::<ObjectOnly<T>>::deserialize(d)?.map(|o| o.0))
}

/// Why `bytes` do not parse, with the JSON path of the offending value.
fn parse_error(bytes: &[u8]) -> WireError {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let err = match serde_path_to_error::deserialize::<_, Submission>(&mut de) {
        Ok(_) => match de.end() {
            Ok(()) => return WireError::NotJson("not a v1 submission".into()),
            Err(e) => return WireError::NotJson(e.to_string()),
        },
        Err(e) => e,
    };
    let path = err.path().to_string();
    let inner = err.into_inner();
    if inner.is_syntax() || inner.is_eof() || path == "." {
        WireError::NotJson(inner.to_string())
    } else {
        WireError::field(path, strip_position(&inner.to_string()))
    }
}

/// Parses `bytes` into a [`Submission`] (shape only; see [`super::validate`]).
pub fn parse(bytes: &[u8]) -> Result<Submission, WireError> {
    if bytes.len() > MAX_SUBMISSION_BYTES {
        return Err(WireError::TooLarge(bytes.len()));
    }
    // serde would also read a struct from a JSON array; the wire is an object.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(WireError::NotJson("expected a JSON object".into()));
    }
    // The plain parse first: tracking the path of every value costs about a third
    // of the parse, and only a malformed submission needs it, so only its error
    // parses again with the path tracked.
    let sub: Submission = match serde_json::from_slice(bytes) {
        Ok(sub) => sub,
        Err(_) => return Err(parse_error(bytes)),
    };
    match sub.v {
        Some(1) => Ok(sub),
        Some(v) => Err(WireError::Version(format!("unsupported version {v} (this core speaks 1)"))),
        None => Err(WireError::Version("required".into())),
    }
}

/// serde_json appends " at line 1 column 123" to messages; the path already says where.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_submission_parses() {
        let s = parse(
            br#"{"v":1,"seq":2,"partial":true,"canonicalText":"Alpha","spans":[{"start":0,"end":5,"kind":"body"}],
            "nodes":[{"labels":["A"],"properties":{"x":1},"spanRefs":[0],"id":"a:1","validTime":{"validFrom":5}}],
            "relationships":[{"type":"R","fromRef":0,"toId":"b"}],"stats":{"rows":1},"contentHash":"ab",
            "childJobs":[{"format":"txt","name":"c","contentB64":"eA=="}],
            "ambiguities":[{"nodeRef":0,"kind":"k","candidates":[{"label":"l","validFrom":1}],"detectorConfidence":0.5,"appliedCandidateConfidence":1}]}"#,
        )
        .unwrap();
        assert_eq!((s.seq, s.partial, s.nodes.len(), s.spans[0].end), (2, true, 1, 5));
        assert_eq!(s.nodes[0].valid_time, Some(Interval { valid_from: 5, valid_to: None }));
        assert_eq!(s.child_jobs[0].content_b64.as_deref(), Some("eA=="));
    }

    #[test]
    fn malformed_shapes_name_the_path() {
        assert!(matches!(parse(b"not json"), Err(WireError::NotJson(_))));
        assert!(matches!(parse(b"[1]"), Err(WireError::NotJson(_))));
        assert!(matches!(parse(br#"{"v":1} x"#), Err(WireError::NotJson(_))));
        assert!(matches!(parse(br#"{"canonicalText":""}"#), Err(WireError::Version(_))));
        assert_eq!(parse(br#"{"v":2}"#).unwrap_err().to_string(), "v: unsupported version 2 (this core speaks 1)");
        let e = parse(br#"{"v":1,"nodes":[{"labels":[1]}]}"#).unwrap_err().to_string();
        assert!(e.starts_with("nodes[0].labels[0]: invalid type"), "{e}");
        let e = parse(br#"{"v":1,"nodes":[{"labels":["A"],"spanref":[]}]}"#).unwrap_err().to_string();
        assert!(e.contains("unknown field `spanref`"), "{e}");
        assert!(parse(br#"{"v":1,"seq":-1}"#).unwrap_err().to_string().starts_with("seq:"));
        assert!(parse(br#"{"v":1,"seq":99999999999}"#).unwrap_err().to_string().starts_with("seq:"));
        assert!(parse(br#"{"v":1,"partial":"yes"}"#).unwrap_err().to_string().starts_with("partial:"));
        // Structs are objects: the array form serde would read as fields in order is refused.
        let e = parse(br#"{"v":1,"canonicalText":"abc","spans":[[0,3,"k"]]}"#).unwrap_err().to_string();
        assert!(e.starts_with("spans[0]: invalid type: sequence, expected a JSON object"), "{e}");
        let e = parse(br#"{"v":1,"nodes":[{"labels":["A"],"validTime":[1]}]}"#).unwrap_err().to_string();
        assert!(e.starts_with("nodes[0].validTime: invalid type"), "{e}");
        assert!(parse(br#"{"v":1,"nodes":[{"labels":["A"],"validTime":null}]}"#).is_ok());
    }
}
