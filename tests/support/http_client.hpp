// SPDX-License-Identifier: MIT
#pragma once
// A blocking HTTP client for tests (libcurl's easy interface): one request, the status, the
// headers (names lower-case) and the body.
#include <curl/curl.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace sg::test {

struct HttpResult {
  long status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
};

namespace detail {
inline std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}
inline std::size_t add_header(char* data, std::size_t size, std::size_t n, void* out) {
  const std::string line(data, size * n);
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    value.erase(value.find_last_not_of("\r\n ") + 1);
    (*static_cast<std::map<std::string, std::string>*>(out))[name] = value;
  }
  return size * n;
}
}  // namespace detail

/// Sends `method url` with `body` (as application/json when not empty) and `headers`
/// ("Name: value"). Throws std::runtime_error when the request cannot be made.
inline HttpResult http_request(const std::string& method, const std::string& url,
                               const std::string& body = {},
                               const std::vector<std::string>& headers = {}) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) throw std::runtime_error("curl_easy_init failed");
  HttpResult result;
  curl_slist* list = nullptr;
  if (!body.empty()) list = curl_slist_append(list, "Content-Type: application/json");
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &detail::append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &detail::add_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &result.headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 30000L);
  const CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK) {
    throw std::runtime_error(std::string("HTTP request failed: ") + curl_easy_strerror(code));
  }
  return result;
}

}  // namespace sg::test
