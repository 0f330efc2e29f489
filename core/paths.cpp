#include "core/paths.h"

namespace sdw {

namespace fs = std::filesystem;

std::string recordedPath(const fs::path& p) {
    if (p.empty()) return {};
    std::error_code ec;
    const fs::path abs = fs::absolute(p, ec).lexically_normal();
    if (ec) return p.lexically_normal().string();
    const fs::path cwd = fs::current_path(ec);
    if (ec) return abs.string();
    const fs::path rel = abs.lexically_relative(cwd.lexically_normal());
    if (rel.empty() || *rel.begin() == "..") return abs.string();
    return rel.string();
}

fs::path resolveRecordedPath(const std::string& recorded, const fs::path& runFile) {
    if (recorded.empty()) return {};
    const fs::path p(recorded);
    if (p.is_absolute()) return p;
    std::error_code ec;
    if (fs::exists(p, ec)) return p;
    if (!runFile.empty()) {
        fs::path dir = fs::absolute(runFile, ec).lexically_normal().parent_path();
        while (!dir.empty()) {
            if (fs::exists(dir / p, ec)) return dir / p;
            if (dir == dir.root_path() || dir.parent_path() == dir) break;
            dir = dir.parent_path();
        }
    }
    return p;
}

}  // namespace sdw
