// The generic schedule knobs of the kernel-IR templates (templates.h), read and checked once.
#include <fmt/format.h>

#include "ir/error.h"
#include "worker/codegen/templates/templates.h"

namespace fusetune::codegen {

TemplateKnobs ReadKnobs(const Schedule& schedule, GroupTemplate templ, const TargetInfo& target) {
  const bool composite = templ == GroupTemplate::kComposite;
  TemplateKnobs knobs;
  knobs.vector = target.vector_floats();
  for (const auto& [key, value] : schedule.knobs) {
    if (key == "vector") {
      if (value != 1 && value != 4 && value != 8 && value != 16 && value != 32)
        throw UserError(fmt::format("schedule knob vector={} must be 1, 4, 8, 16 or 32", value));
      knobs.vector = static_cast<int>(value);
    } else if (key == "parallel") {
      if (value != 0 && value != 1)
        throw UserError(fmt::format("schedule knob parallel={} must be 0 or 1", value));
      knobs.parallel = value == 1;
    } else if (key == "tile") {
      if (value != 0 && value != 1)
        throw UserError(fmt::format("schedule knob tile={} must be 0 or 1", value));
      knobs.tile = value == 1;
    } else if (key == "online" && composite) {
      if (value != 0 && value != 1)
        throw UserError(fmt::format("schedule knob online={} must be 0 or 1", value));
      knobs.online = value == 1;
    } else {
      throw UserError(
          fmt::format("unknown schedule knob '{}' (the {} template has: vector, "
                      "parallel, tile{})",
                      key, TemplateName(templ), composite ? ", online" : ""));
    }
  }
  return knobs;
}

}  // namespace fusetune::codegen
