//! `telha graph`, `telha node` and `telha ambiguities`: graph reads over gRPC,
//! printed as one JSON document (`--json`, in the wire's own words: DESIGN.md §7)
//! or as text.
use std::process::ExitCode;

use anyhow::Result;
use serde_json::{json, Value};

use super::client::status_err;
use super::{AmbiguitiesArgs, Client, Global, GraphArgs, NodeArgs};
use crate::proto::*;

fn object(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|_| json!({}))
}

fn relationship_json(r: &GraphRelationship) -> Value {
    json!({
        "type": r.r#type,
        "fromId": r.from_id,
        "toId": r.to_id,
        "properties": object(&r.properties_json),
        "dangling": r.from_dangling || r.to_dangling,
    })
}

fn ambiguity_json(a: &GraphAmbiguity) -> Value {
    let candidates: Vec<Value> = a
        .candidates
        .iter()
        .map(|c| {
            let mut v = json!({ "label": c.label, "validFrom": c.valid_from });
            if let Some(to) = c.valid_to {
                v["validTo"] = json!(to);
            }
            v
        })
        .collect();
    let mut v = json!({
        "job": a.job_id,
        "nodeId": a.node_id,
        "kind": a.kind,
        "candidates": candidates,
        "detectorConfidence": a.detector_confidence,
        "appliedCandidateConfidence": a.applied_candidate_confidence,
    });
    if !a.severity_hint.is_empty() {
        v["severityHint"] = json!(a.severity_hint);
    }
    v
}

/// A projection in the shape of DESIGN.md §7, plus `job`, `tenant`, `unchanged`, `truncated`.
pub fn projection_json(p: &Projection) -> Value {
    json!({
        "job": p.job_id,
        "tenant": p.tenant_id,
        "canonicalText": p.canonical_text,
        "spans": p.spans.iter().map(|s| json!({"start": s.start, "end": s.end, "kind": s.kind})).collect::<Vec<_>>(),
        "nodes": p.nodes.iter().map(|n| json!({"id": n.id, "labels": n.labels, "properties": object(&n.properties_json), "spanRefs": n.span_refs, "version": n.version})).collect::<Vec<_>>(),
        "relationships": p.relationships.iter().map(relationship_json).collect::<Vec<_>>(),
        "ambiguities": p.ambiguities.iter().map(ambiguity_json).collect::<Vec<_>>(),
        "unchanged": p.unchanged,
        "truncated": p.truncated,
        "submission_hash": p.submission_hash,
    })
}

pub fn node_json(n: &GraphNode) -> Value {
    let current = n.versions.last();
    json!({
        "id": n.id,
        "tenant": n.tenant_id,
        "labels": current.map(|v| v.labels.clone()).unwrap_or_default(),
        "properties": current.map_or(json!({}), |v| object(&v.properties_json)),
        "version": current.map_or(0, |v| v.version),
        "versions": n.versions.iter().map(|v| {
            let mut x = json!({"version": v.version, "labels": v.labels, "properties": object(&v.properties_json), "job": v.job_id, "attempt": v.attempt, "committedAt": v.committed_at});
            if let Some(f) = v.valid_from { x["validFrom"] = json!(f); }
            if let Some(t) = v.valid_to { x["validTo"] = json!(t); }
            x
        }).collect::<Vec<_>>(),
        "edgesOut": n.edges_out.iter().map(relationship_json).collect::<Vec<_>>(),
        "edgesIn": n.edges_in.iter().map(relationship_json).collect::<Vec<_>>(),
        "truncated": n.truncated,
    })
}

fn edge_line(r: &GraphRelationship) -> String {
    let mut s = format!("{} -[{}]-> {}", r.from_id, r.r#type, r.to_id);
    if r.from_dangling || r.to_dangling {
        s.push_str("  (dangling)");
    }
    if r.properties_json != "{}" {
        s.push_str(&format!("  {}", r.properties_json));
    }
    s
}

/// Longest canonical text printed in text mode.
const TEXT_PREVIEW: usize = 2000;

pub async fn graph(g: &Global, args: GraphArgs) -> Result<ExitCode> {
    let mut client = Client::connect(g).await?;
    let req = GetProjectionRequest { job_id: args.id, tenant_id: args.tenant.unwrap_or_default(), max_items: args.page_items, skip: 0 };
    let mut p = client.ingest.get_projection(req.clone()).await.map_err(status_err)?.into_inner();
    if args.all {
        // Each page holds the next `page_items` entries of every list that has more.
        let mut skip = 0u64;
        while p.truncated {
            skip += u64::from(args.page_items);
            let next = client.ingest.get_projection(GetProjectionRequest { skip, ..req.clone() }).await.map_err(status_err)?.into_inner();
            p.spans.extend(next.spans);
            p.nodes.extend(next.nodes);
            p.relationships.extend(next.relationships);
            p.ambiguities.extend(next.ambiguities);
            p.truncated = next.truncated;
        }
    }
    if g.json {
        super::render::print_json(&projection_json(&p));
        return Ok(ExitCode::SUCCESS);
    }
    println!("job {}  tenant {}  {} nodes, {} relationships, {} spans, {} ambiguities{}", p.job_id, p.tenant_id, p.nodes.len(), p.relationships.len(), p.spans.len(), p.ambiguities.len(), if p.unchanged { "  (unchanged recrawl: nothing projected)" } else { "" });
    let text = crate::failure::truncate_utf8(&p.canonical_text, TEXT_PREVIEW);
    println!("text ({} bytes):\n{text}{}", p.canonical_text.len(), if text.len() < p.canonical_text.len() { " …" } else { "" });
    for n in &p.nodes {
        println!("  node {}  v{}  {}  {}  spans {:?}", n.id, n.version, n.labels.join(":"), n.properties_json, n.span_refs);
    }
    for r in &p.relationships {
        println!("  edge {}", edge_line(r));
    }
    for a in &p.ambiguities {
        let labels: Vec<&str> = a.candidates.iter().map(|c| c.label.as_str()).collect();
        println!("  ambiguity {} on {}: {}", a.kind, a.node_id, labels.join(" | "));
    }
    if p.truncated {
        println!("  (lists cut at {} entries: --all pages through them)", args.page_items);
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn node(g: &Global, args: NodeArgs) -> Result<ExitCode> {
    let mut client = Client::connect(g).await?;
    let n = client.ingest.get_node(GetNodeRequest { tenant_id: args.tenant, node_id: args.id }).await.map_err(status_err)?.into_inner();
    if g.json {
        super::render::print_json(&node_json(&n));
        return Ok(ExitCode::SUCCESS);
    }
    println!("node {}  tenant {}", n.id, n.tenant_id);
    for v in &n.versions {
        let valid = match (v.valid_from, v.valid_to) {
            (Some(f), Some(t)) => format!("  valid [{f}, {t})"),
            (Some(f), None) => format!("  valid from {f}"),
            _ => String::new(),
        };
        println!("  v{}  job {} lease {}  {}  {}{valid}", v.version, v.job_id, v.attempt, v.labels.join(":"), v.properties_json);
    }
    for r in &n.edges_out {
        println!("  out {}", edge_line(r));
    }
    for r in &n.edges_in {
        println!("  in  {}", edge_line(r));
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn ambiguities(g: &Global, args: AmbiguitiesArgs) -> Result<ExitCode> {
    let mut client = Client::connect(g).await?;
    let mut all = Vec::new();
    let mut token = String::new();
    loop {
        let req = ListAmbiguitiesRequest { tenant_id: args.tenant.clone().unwrap_or_default(), job_id: args.job.clone().unwrap_or_default(), page_size: 1000, page_token: token };
        let resp = client.ingest.list_ambiguities(req).await.map_err(status_err)?.into_inner();
        all.extend(resp.ambiguities);
        if resp.next_page_token.is_empty() {
            break;
        }
        token = resp.next_page_token;
    }
    if g.json {
        super::render::print_json(&Value::Array(all.iter().map(ambiguity_json).collect()));
        return Ok(ExitCode::SUCCESS);
    }
    println!("{:>8}  {:<24}  {:<20}  {:>5}  CANDIDATES", "JOB", "NODE", "KIND", "CONF");
    for a in &all {
        let labels: Vec<&str> = a.candidates.iter().map(|c| c.label.as_str()).collect();
        println!("{:>8}  {:<24}  {:<20}  {:>5.2}  {}", a.job_id, a.node_id, a.kind, a.detector_confidence, labels.join(" | "));
    }
    Ok(ExitCode::SUCCESS)
}
