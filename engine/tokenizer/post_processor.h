#pragma once
// tokenizer.json "post_processor" for a single sequence (encode(text, addSpecial=true)):
// ByteLevel (ids unchanged), TemplateProcessing ("single" template: special tokens around
// sequence A), RobertaProcessing / BertProcessing (cls A sep), and Sequence of these. Others ->
// Unsupported naming the type. Internal header; immutable after fromJson() (thread-safe).
#include "tokenizer/json_util.h"

#include <cstdint>
#include <vector>

namespace coli {

class PostProcessor {
public:
    static Result<PostProcessor> fromJson(const tokjson::Json& j, const tokjson::Ctx& ctx);
    // ids -> prefix + ids + suffix.
    void apply(std::vector<int32_t>& ids) const;

private:
    static Status parse(const tokjson::Json& j, const tokjson::Ctx& ctx, PostProcessor& p);
    std::vector<int32_t> m_prefix, m_suffix;
};

} // namespace coli
