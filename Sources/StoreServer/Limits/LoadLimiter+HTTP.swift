internal import HTTPTypes
internal import Models

extension APIError {
    /// The answer to a ``LoadLimiter/Refusal``: 503 `unavailable` when the whole process is at
    /// its cap, 429 `rate-limited` when one key is over its cap or rate, both with
    /// `Retry-After` and the refusal in words (`what` names the work: "sign-ins", "connections").
    static func refused(_ refusal: LoadLimiter.Refusal, what: String = "requests") -> APIError {
        let detail: String
        switch (refusal.kind, refusal.reason) {
        case (nil, _): detail = "the server is at its limit of \(what) at once"
        case (let kind?, .atOnce): detail = "too many \(what) at once from this \(kind)"
        case (let kind?, .rate): detail = "too many \(what) in a row from this \(kind)"
        }
        return APIError(
            APIProblem(
                type: refusal.isOverloaded ? ProblemType.unavailable : ProblemType.rateLimited,
                title: refusal.isOverloaded ? "Service unavailable" : "Too many requests",
                status: refusal.status,
                detail: "\(detail); retry in \(refusal.retryAfter) s"
            ),
            headers: [(.retryAfter, String(refusal.retryAfter))]
        )
    }
}
