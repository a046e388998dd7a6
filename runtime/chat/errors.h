// Exceptions thrown by the chat-template engine.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace linnet::chat {

// Base of every error the engine throws.
class ChatTemplateError : public std::runtime_error {
 public:
  explicit ChatTemplateError(const std::string& what) : std::runtime_error(what) {}
};

// The template text does not parse. what() reads
// "<template>:<line>:<column>: <message>"; line and column are 1-based, the
// column counts code points.
class TemplateSyntaxError : public ChatTemplateError {
 public:
  TemplateSyntaxError(std::string templateName, size_t line, size_t column, std::string message)
      : ChatTemplateError(templateName + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                          message),
        templateName_(std::move(templateName)),
        line_(line),
        column_(column),
        message_(std::move(message)) {}
  const std::string& templateName() const { return templateName_; }
  size_t line() const { return line_; }
  size_t column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  std::string templateName_;
  size_t line_;
  size_t column_;
  std::string message_;
};

// An error while rendering. what() reads "<template>:<line>:<column>: <message>"
// (the position of the expression or statement that failed); message() is the
// bare message, worded like jinja2's where jinja2 has one.
class TemplateRuntimeError : public ChatTemplateError {
 public:
  TemplateRuntimeError(std::string templateName, size_t line, size_t column, std::string message,
                       std::string kind = "TemplateRuntimeError")
      : ChatTemplateError(templateName + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                          message),
        templateName_(std::move(templateName)),
        line_(line),
        column_(column),
        message_(std::move(message)),
        kind_(std::move(kind)) {}
  const std::string& templateName() const { return templateName_; }
  size_t line() const { return line_; }
  size_t column() const { return column_; }
  const std::string& message() const { return message_; }
  // The Python exception class jinja2/transformers would raise: "UndefinedError",
  // "TypeError", "ValueError", "ZeroDivisionError", "SecurityError",
  // "OverflowError", "LimitError" (ours: a resource limit was hit), ...
  const std::string& kind() const { return kind_; }

 protected:
  // For subclasses whose what() is the bare message.
  TemplateRuntimeError(std::string templateName, size_t line, size_t column, std::string message,
                       std::string kind, bool bareWhat)
      : ChatTemplateError(message),
        templateName_(std::move(templateName)),
        line_(line),
        column_(column),
        message_(std::move(message)),
        kind_(std::move(kind)) {
    (void)bareWhat;
  }

 private:
  std::string templateName_;
  size_t line_;
  size_t column_;
  std::string message_;
  std::string kind_;
};

// Thrown by the template's own raise_exception(msg): message() is exactly msg,
// as str() of the jinja2.exceptions.TemplateError transformers raises; what()
// adds where: "<template>:<line>:<column>: raise_exception: <msg>".
class TemplateRaisedError : public TemplateRuntimeError {
 public:
  TemplateRaisedError(std::string templateName, size_t line, size_t column, std::string message)
      : TemplateRuntimeError(templateName, line, column, message, "TemplateError", true),
        what_(templateName + ":" + std::to_string(line) + ":" + std::to_string(column) +
              ": raise_exception: " + message) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

// A resource limit (output size, loop iterations, steps, recursion depth) was
// exceeded while rendering.
class TemplateLimitError : public TemplateRuntimeError {
 public:
  TemplateLimitError(std::string templateName, size_t line, size_t column, std::string message)
      : TemplateRuntimeError(std::move(templateName), line, column, std::move(message), "LimitError") {}
};

}  // namespace linnet::chat
