#pragma once
// Status and Result<T>: how every engine function reports failure.
// The engine never throws across its API, never calls exit() or abort() on bad input: a GUI hosts
// it. Messages name the file (and tensor, key, token...) and the problem, e.g.
//   "model.safetensors: tensor 'model.norm.weight': data offsets [10, 20) outside data section".
// Thread-safety: plain values; safe to copy and move between threads.
#include <string>
#include <utility>
#include <variant>

namespace coli {

enum class ErrorCode {
    Ok = 0,
    InvalidArgument, // a parameter out of range (sampling parameters, sizes)
    NotFound,        // a file, tensor or key that must exist does not
    Malformed,       // a file exists but its content is invalid
    Unsupported,     // valid input the engine does not handle (architecture, dtype)
    Io,              // a read or write failed
    Cancelled,       // the caller asked to stop
    Numeric,         // NaN/Inf where a finite value is required
    Internal,        // a broken invariant inside the engine
    NoSpace, // a write failed because the disk is full (ENOSPC, EDQUOT; EFBIG: a file size limit):
             // what was written so far is kept, so the operation can resume once space is freed
    Network, // a connection or HTTP exchange failed (refused, reset, timeout, TLS, 5xx)
    Unauthorized, // the server refused the request for want of (valid) credentials (401/403)
};

const char* errorCodeName(ErrorCode code);

class [[nodiscard]] Status {
public:
    Status() = default; // OK
    Status(ErrorCode code, std::string message) : m_code(code), m_message(std::move(message)) {}

    static Status ok() { return {}; }
    bool isOk() const { return m_code == ErrorCode::Ok; }
    explicit operator bool() const { return isOk(); }
    ErrorCode code() const { return m_code; }
    const std::string& message() const { return m_message; }
    // "Malformed: model.safetensors: ..." (empty string when OK).
    std::string toString() const;

private:
    ErrorCode m_code = ErrorCode::Ok;
    std::string m_message;
};

// Either a value or a non-OK Status. Access value() only when isOk().
template <class T> class [[nodiscard]] Result {
public:
    Result(T value) : m_v(std::move(value)) {}
    Result(Status status) : m_v(std::move(status)) {}
    Result(ErrorCode code, std::string message) : m_v(Status(code, std::move(message))) {}

    bool isOk() const { return std::holds_alternative<T>(m_v); }
    explicit operator bool() const { return isOk(); }
    T& value() & { return std::get<T>(m_v); }
    const T& value() const& { return std::get<T>(m_v); }
    T&& value() && { return std::get<T>(std::move(m_v)); }
    T* operator->() { return &std::get<T>(m_v); }
    const T* operator->() const { return &std::get<T>(m_v); }
    T& operator*() & { return std::get<T>(m_v); }
    // The error; an OK Status when the result holds a value.
    Status status() const { return isOk() ? Status() : std::get<Status>(m_v); }

private:
    std::variant<T, Status> m_v;
};

} // namespace coli

// Propagate a non-OK Status from an expression returning Status.
#define COLI_RETURN_IF_ERROR(expr)                                                                 \
    do {                                                                                           \
        ::coli::Status coli_status_ = (expr);                                                      \
        if (!coli_status_.isOk()) return coli_status_;                                             \
    } while (0)
