//! Where a person resolves approvals, as MCP tells a model to relay it: the person channel's
//! address (`server` serves it). The token is for the person's terminal, never for a model.

/// Where a person resolves approvals: the base URL of the endpoint and its token.
#[derive(Debug, Clone)]
pub struct PersonChannel {
    /// e.g. `http://127.0.0.1:7777`
    pub base_url: String,
    /// The person token (`Authorization: Bearer …`). Never sent to a model.
    pub token: String,
}

impl PersonChannel {
    /// How a person grants `approval_id`, for the model to relay to its user (no token in it).
    pub fn how_to_grant(&self, approval_id: &str) -> String {
        format!(
            "A person approves in a terminal with `glovebox approve {approval_id}` (add --for-task to allow this site for the session, --deny to refuse), or with POST {}/api/approvals/{approval_id} and the person token printed when Glovebox started.",
            self.base_url
        )
    }
}
