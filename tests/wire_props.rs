//! Property tests: parse + validate of a wire submission never panics, whatever the
//! bytes, and a submission that validates keeps every offset and ref in range.
use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{json, Value};
use telha::graph::validate::{validate, Caps};
use telha::graph::wire::parse;

fn formats() -> BTreeSet<String> {
    ["txt".to_string(), "pdf".to_string()].into()
}

/// Arbitrary JSON values, biased towards the wire's own keys and small numbers.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..20).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "[A-Za-zé0-9_ :\u{0}-\u{1f}]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            Just("v".to_string()),
            Just("seq".to_string()),
            Just("partial".to_string()),
            Just("canonicalText".to_string()),
            Just("spans".to_string()),
            Just("start".to_string()),
            Just("end".to_string()),
            Just("nodes".to_string()),
            Just("labels".to_string()),
            Just("properties".to_string()),
            Just("spanRefs".to_string()),
            Just("id".to_string()),
            Just("relationships".to_string()),
            Just("type".to_string()),
            Just("fromRef".to_string()),
            Just("toId".to_string()),
            Just("childJobs".to_string()),
            Just("contentB64".to_string()),
            Just("ambiguities".to_string()),
            Just("nodeRef".to_string()),
            Just("candidates".to_string()),
            "[a-z]{1,6}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Well-shaped submissions with random offsets, refs and text: each part is mostly
/// valid and sometimes not, so both the refusals and the accepted path are exercised.
fn submission() -> impl Strategy<Value = (Value, u64)> {
    ("[aé€😀 \n]{0,12}", prop_oneof![Just(0u64), 0u64..8]).prop_flat_map(|(text, base)| {
        let hi = base + text.len() as u64 + 1;
        let span = (base.saturating_sub(1)..=hi, base.saturating_sub(1)..=hi).prop_map(|(a, b)| json!({"start": a.min(b), "end": a.max(b), "kind": "k"}));
        let label = prop_oneof![8 => Just("A".to_string()), 4 => Just("B_1".to_string()), 1 => "[A-Za-z0-9_ ]{0,4}"];
        let node = (prop::collection::vec(label, 1..3), prop::collection::vec(0u64..3, 0..2), prop::option::of("[a-z:]{1,4}[0-9]?"))
            .prop_map(|(labels, refs, id)| {
                let mut n = json!({"labels": labels, "spanRefs": refs});
                if let Some(id) = id {
                    n["id"] = json!(id);
                }
                n
            });
        let rel = (0u64..4, prop::option::of("[a-z0-9]{1,3}"), 0u64..4, prop::bool::weighted(0.1)).prop_map(|(f, fid, t, both)| {
            let mut r = json!({"type": "R", "toRef": t});
            match fid {
                Some(id) => r["fromId"] = json!(id),
                None => r["fromRef"] = json!(f),
            }
            if both {
                r["toId"] = json!("x");
            }
            r
        });
        let candidate = (any::<i64>(), prop::option::weighted(0.2, any::<i64>())).prop_map(|(f, t)| json!({"label": "c", "validFrom": f, "validTo": t}));
        let amb = (0u64..4, prop::collection::vec(candidate, 0..3), 0.0f64..1.1)
            .prop_map(|(n, candidates, conf)| json!({"nodeRef": n, "kind": "k", "candidates": candidates, "detectorConfidence": conf, "appliedCandidateConfidence": 0.5}));
        (
            Just(text),
            prop::collection::vec(span, 0..4),
            prop::collection::vec(node, 0..5),
            prop::collection::vec(rel, 0..3),
            prop::collection::vec(amb, 0..2),
            prop_oneof![Just("aGk=".to_string()), Just(String::new()), "[A-Za-z0-9+/=!]{0,8}"],
            Just(base),
        )
    })
    .prop_map(|(text, spans, nodes, rels, ambs, b64, base)| {
        let sub = json!({"v": 1, "canonicalText": text, "spans": spans, "nodes": nodes, "relationships": rels, "ambiguities": ambs,
            "childJobs": [{"format": "txt", "name": "c", "contentB64": b64}]});
        (sub, base)
    })
}

/// Whether `bytes` at `base` validates (and, when it does, is in range).
fn check(bytes: &[u8], base: u64) -> bool {
    let caps = Caps { max_nodes: 4, ..Caps::default() };
    if let Ok(sub) = parse(bytes) {
        if validate(&sub, base, &caps, &formats()).is_ok() {
            // What passes keeps every offset in this slice and every ref in range.
            let end = base + sub.canonical_text.len() as u64;
            for s in &sub.spans {
                assert!(base <= s.start && s.start <= s.end && s.end <= end);
                assert!(sub.canonical_text.is_char_boundary((s.start - base) as usize));
                assert!(sub.canonical_text.is_char_boundary((s.end - base) as usize));
            }
            for n in &sub.nodes {
                assert!(!n.labels.is_empty() && n.span_refs.iter().all(|r| (*r as usize) < sub.spans.len()));
            }
            for r in &sub.relationships {
                assert!(r.from_ref.is_some() != r.from_id.is_some() && r.to_ref.is_some() != r.to_id.is_some());
                assert!(r.from_ref.is_none_or(|x| (x as usize) < sub.nodes.len()) && r.to_ref.is_none_or(|x| (x as usize) < sub.nodes.len()));
            }
            for a in &sub.ambiguities {
                assert!((a.node_ref as usize) < sub.nodes.len() && !a.candidates.is_empty());
            }
            return true;
        }
    }
    false
}

/// The shaped generator is not vacuous: a fair share of its submissions validate,
/// so the soundness assertions above actually run.
#[test]
fn shaped_generator_reaches_the_valid_path() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = submission();
    let n = 5000;
    let valid = (0..n).filter(|_| {
        let (sub, base) = strategy.new_tree(&mut runner).unwrap().current();
        check(sub.to_string().as_bytes(), base)
    }).count();
    assert!(valid * 100 >= n, "only {valid} of {n} shaped submissions validated");
    eprintln!("{valid} of {n} shaped submissions validated");
}

fn cases() -> u32 {
    std::env::var("TELHA_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Arbitrary bytes: never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256), base in 0u64..64) {
        let _ = check(&bytes, base);
    }

    /// Arbitrary JSON, biased to the wire's keys: never a panic.
    #[test]
    fn arbitrary_json_never_panics(v in json_value(), base in 0u64..8) {
        let _ = check(v.to_string().as_bytes(), base);
        let mut with_v = v;
        if let Value::Object(m) = &mut with_v {
            m.insert("v".into(), json!(1));
        }
        let _ = check(with_v.to_string().as_bytes(), base);
    }

    /// Well-shaped submissions with random offsets and refs: never a panic, and what
    /// validates is in range.
    #[test]
    fn shaped_submissions_validate_soundly((sub, base) in submission()) {
        let _ = check(sub.to_string().as_bytes(), base);
    }
}
