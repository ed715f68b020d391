#pragma once
// Exporting a session (docs/storage.md "Export"): as Markdown for people, as JSON for programs.
// Both take the values SessionStore returns and never fail (invalid UTF-8 in a text is written
// as U+FFFD in JSON; Markdown copies the bytes).
// Thread-safety: pure functions; safe from any thread.
#include "storage/session_types.h"

#include <string>
#include <vector>

namespace coli::storage {

// The session as a Markdown document:
//   # <title>                      ("Untitled session" when empty; line breaks become spaces)
//   - Model: <folder> (identity <first 12 hex digits>)   - Created: <UTC ISO 8601>
//   - Sampling: ... / Seed: ...    (only what the session sets)
//   ## System prompt               (when there is one) followed by its text
//   ## User / ## Assistant / ## System, then the message text exactly as stored (Markdown,
//   code fences and <think>...</think> blocks kept); an answer that did not end by itself gets a
//   line "*(stopped: <reason>)*".
// Messages are written in the order given (loadMessages: by position).
std::string exportMarkdown(const SessionInfo& session, const std::vector<MessageRecord>& messages);

// The session as a JSON document (UTF-8, 2-space indent), format version 2 (version 1 had
// "mib_read_per_token", the whole turn's read per token, and no prompt part):
// {
//   "format": "colibri-session", "version": 2,
//   "title": str, "created": "<UTC ISO 8601 ms>", "updated": "...",
//   "created_ms": int, "updated_ms": int,                         (Unix ms)
//   "model": {"identity": str, "path": str},
//   "system_prompt": str, "sampling": {<SamplingSettings keys>}, "seed": int | null,
//   "messages": [ {"position": int, "role": "system"|"user"|"assistant", "text": str,
//                  "created_ms": int, "stop_reason": str | null, "seed": int | null,
//                  "sampling": {...} | null,
//                  "run": {<run object>} | null } ... ]
// }
// A run object (a message's run found in `runs`, else null): "prompt_tokens", "reused_tokens",
// "generated_tokens", "tokens_per_second", "ttft_seconds", "prefill_seconds", "decode_seconds",
// "time_split": {"attention_s", "expert_ffn_s", "expert_wait_s", "sampling_s", "other_s"},
// "tiers": {"routed", "hits_pinned", "hits_cache", "in_flight_hits", "misses", "hits_vram"
// (computed on the GPU), "bytes_read", "evictions", "prefetch_issued", "prefetch_used", "tokens",
// "prefill_bytes_read", "prefill_tokens" (the prompt's part; null for runs saved before it was
// stored)}, "expert_hit_rate" (found ready in VRAM or RAM), "mib_read_per_decode_token"
// (RunRecord::mibReadPerDecodeToken),
// "mib_read_per_prompt_token" (null when unknown or no prompt token ran), "created_ms".
// Database ids are not exported.
std::string exportJson(const SessionInfo& session, const std::vector<MessageRecord>& messages,
                       const std::vector<RunRecord>& runs = {});

} // namespace coli::storage
