#pragma once
// The HTML status page of `fusetune serve`: rendered on the server into one self-contained page
// (inline CSS, inline SVG charts, no script, no external resource: a farm may be offline) that
// reloads itself every few seconds. Everything taken from the store is HTML-escaped.
#include <string>
#include <string_view>

#include "server/service/status_snapshot.h"

namespace fusetune::service {

std::string RenderStatusPage(const StatusSnapshot& snapshot);

// & < > " ' as entities: safe inside element text and quoted attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace fusetune::service
