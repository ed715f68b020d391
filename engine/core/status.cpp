#include "core/status.h"

namespace coli {

const char* errorCodeName(ErrorCode code) {
    switch (code) {
    case ErrorCode::Ok:
        return "OK";
    case ErrorCode::InvalidArgument:
        return "Invalid argument";
    case ErrorCode::NotFound:
        return "Not found";
    case ErrorCode::Malformed:
        return "Malformed";
    case ErrorCode::Unsupported:
        return "Unsupported";
    case ErrorCode::Io:
        return "I/O error";
    case ErrorCode::Cancelled:
        return "Cancelled";
    case ErrorCode::Numeric:
        return "Numeric error";
    case ErrorCode::Internal:
        return "Internal error";
    case ErrorCode::NoSpace:
        return "Disk full";
    case ErrorCode::Network:
        return "Network error";
    case ErrorCode::Unauthorized:
        return "Not authorised";
    }
    return "Unknown";
}

std::string Status::toString() const {
    if (isOk()) return {};
    return std::string(errorCodeName(m_code)) + ": " + m_message;
}

} // namespace coli
