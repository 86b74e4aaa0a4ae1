//! Stored records, encoded with prost so that fields can be added without a migration.
//! These are storage, not wire: the gRPC messages live in `proto/`.

#[derive(Clone, PartialEq, prost::Message)]
pub struct JobRecord {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(string, tag = "2")]
    pub tenant: String,
    #[prost(string, tag = "3")]
    pub organization: String,
    #[prost(string, tag = "4")]
    pub format: String,
    #[prost(string, tag = "5")]
    pub name: String,
    #[prost(string, tag = "6")]
    pub options_json: String,
    #[prost(string, tag = "7")]
    pub url: String,
    /// blake3 hex of the content blob; empty for URL jobs.
    #[prost(string, tag = "8")]
    pub blob: String,
    #[prost(uint64, tag = "9")]
    pub size: u64,
    /// `JobState` code.
    #[prost(uint32, tag = "10")]
    pub state: u32,
    /// Failed attempts since the job was (re)queued by a client.
    #[prost(uint32, tag = "11")]
    pub attempts: u32,
    /// The last lease number handed out: the fencing token. Never reused.
    #[prost(uint64, tag = "12")]
    pub lease_seq: u64,
    #[prost(int64, tag = "13")]
    pub created_at: i64,
    #[prost(int64, tag = "14")]
    pub updated_at: i64,
    #[prost(int64, tag = "15")]
    pub next_attempt_at: i64,
    #[prost(string, tag = "16")]
    pub submission_hash: String,
    #[prost(uint32, tag = "17")]
    pub node_count: u32,
    #[prost(uint64, repeated, tag = "18")]
    pub parents: Vec<u64>,
    #[prost(uint64, repeated, tag = "19")]
    pub children: Vec<u64>,
    #[prost(bool, tag = "20")]
    pub unchanged: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseRecord {
    #[prost(string, tag = "1")]
    pub worker_id: String,
    #[prost(uint64, tag = "2")]
    pub attempt: u64,
    #[prost(int64, tag = "3")]
    pub deadline: i64,
    #[prost(int64, tag = "4")]
    pub granted_at: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FailureRecord {
    #[prost(uint64, tag = "1")]
    pub attempt: u64,
    #[prost(string, tag = "2")]
    pub kind: String,
    #[prost(bool, tag = "3")]
    pub permanent: bool,
    #[prost(string, tag = "4")]
    pub reason: String,
    #[prost(int64, tag = "5")]
    pub at: i64,
    #[prost(string, tag = "6")]
    pub worker_id: String,
    #[prost(int32, optional, tag = "7")]
    pub exit_code: Option<i32>,
    #[prost(int32, optional, tag = "8")]
    pub signal: Option<i32>,
    #[prost(string, tag = "9")]
    pub stderr_tail: String,
    #[prost(uint64, tag = "10")]
    pub peak_rss_bytes: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SubmissionRecord {
    #[prost(bytes = "vec", tag = "1")]
    pub result_json: Vec<u8>,
    #[prost(string, repeated, tag = "2")]
    pub node_ids: Vec<String>,
    #[prost(bool, tag = "3")]
    pub partial: bool,
}
