#include "widgets/studycellmodel.h"

#include "widgets/csv.h"

#include <QTextStream>

namespace sdw::widgets {

namespace {

const StudyCi* figure(const StudyCellData& c, int column) {
  switch (column) {
    case StudyCellModel::Kl: return &c.kl;
    case StudyCellModel::Agreement: return &c.agreement;
    case StudyCellModel::FirstDivergence: return &c.firstDivergence;
    case StudyCellModel::PplDenseGen: return &c.pplDenseGen;
    case StudyCellModel::PplText: return &c.pplText;
    case StudyCellModel::RelError: return &c.meanRelError;
    default: return nullptr;
  }
}

int decimalsOf(int column) {
  switch (column) {
    case StudyCellModel::Kl:
    case StudyCellModel::RelError: return 4;
    case StudyCellModel::Agreement: return 3;
    case StudyCellModel::FirstDivergence: return 1;
    default: return 2;
  }
}

}  // namespace

void StudyCellModel::setCells(const QVector<StudyCellData>& cells) {
  beginResetModel();
  rows_ = cells;
  endResetModel();
}

const StudyCellData* StudyCellModel::rowAt(int r) const { return (r >= 0 && r < rows_.size()) ? &rows_[r] : nullptr; }

int StudyCellModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int StudyCellModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant StudyCellModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const StudyCellData& r = rows_[index.row()];
  const int c = index.column();
  const StudyCi* f = figure(r, c);
  if (role == Qt::TextAlignmentRole)
    return (f || c == Seeds) ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
  if (role == CiRole) return f ? QVariant(f->ci) : QVariant();
  if (role == ValueRole) {
    if (f) return f->mean;  // NaN sorts apart from the numbers; still a number
    switch (c) {
      case Source: return r.source;
      case Decoding: return r.decoding;
      case Solver: return r.solver;
      case Pattern: return r.pattern;
      case Seeds: return r.seeds;
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole && f && f->valid())
    return f->n > 1 ? tr("mean %1, 95% interval [%2, %3] over %4 seeds")
                          .arg(f->mean, 0, 'g', 6)
                          .arg(f->mean - f->ci, 0, 'g', 6)
                          .arg(f->mean + f->ci, 0, 'g', 6)
                          .arg(f->n)
                    : tr("one seed: no interval");
  if (role != Qt::DisplayRole) return {};
  if (f) return formatStudyCi(*f, decimalsOf(c));
  switch (c) {
    case Source: return studySourceName(r.source);
    case Decoding: return r.decoding;
    case Solver: return studySolverName(r.solver);
    case Pattern: return studyPatternName(r.pattern);
    case Seeds: return r.seeds;
    default: return {};
  }
}

QVariant StudyCellModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return QAbstractTableModel::headerData(section, o, role);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Source: return tr("Calibration source: fixed text, the model's own decoding (AR), or another model's");
      case Decoding: return tr("How calibration, reference and evaluation decode: greedy, or sampled at T = 1");
      case Kl:
        return tr(
            "Mean KL(dense || pruned) in nats along the pruned model's own trajectories, decoded as the "
            "cell's decoding; mean ± 95% interval over seeds");
      case Agreement: return tr("Share of steps where the dense and the pruned argmax agree");
      case FirstDivergence:
        return tr("Median over prompts of the first step whose token differs from the dense argmax");
      case PplDenseGen: return tr("Perplexity of the pruned model on the dense model's continuations");
      case PplText: return tr("Perplexity on held-out text, teacher-forced");
      case RelError: return tr("Pruning: mean relative output error over modules on the calibration data");
      case Seeds: return tr("Seeds the cell is summarised over");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Source: return tr("Source");
    case Decoding: return tr("Decoding");
    case Solver: return tr("Solver");
    case Pattern: return tr("Pattern");
    case Kl: return tr("KL");
    case Agreement: return tr("Agreement");
    case FirstDivergence: return tr("First div.");
    case PplDenseGen: return tr("PPL (dense gen)");
    case PplText: return tr("PPL (text)");
    case RelError: return tr("Rel. error");
    case Seeds: return tr("Seeds");
    default: return {};
  }
}

QString StudyCellModel::toCsv() const {
  QString out;
  QTextStream s(&out);
  s << "source,decoding,solver,pattern";
  for (const char* f : {"kl", "agreement", "first_divergence", "ppl_dense_gen", "ppl_text", "mean_rel_error"})
    s << ',' << f << "_mean," << f << "_ci95," << f << "_n";
  s << '\n';
  for (const StudyCellData& r : rows_) {
    s << csvField(r.source) << ',' << csvField(r.decoding) << ',' << csvField(r.solver) << ',' << csvField(r.pattern);
    for (const StudyCi* f : {&r.kl, &r.agreement, &r.firstDivergence, &r.pplDenseGen, &r.pplText, &r.meanRelError})
      s << ',' << csvNumber(f->mean) << ',' << csvNumber(f->ci) << ',' << f->n;
    s << '\n';
  }
  return out;
}

}  // namespace sdw::widgets
