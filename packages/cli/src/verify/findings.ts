/** One thing `verify` found. */
export interface Finding {
  /** `problem`: the store is damaged or inconsistent (exit 9). `warning`: worth knowing. */
  severity: 'problem' | 'warning';
  /** `sessions/<id>`, `revisions/<id>`, `lifecycle/<id>`, `journal <session>/<run>`, `index`. */
  item: string;
  message: string;
}

export class Findings {
  readonly list: Finding[] = [];

  problem(item: string, message: string): void {
    this.list.push({ severity: 'problem', item, message });
  }

  warning(item: string, message: string): void {
    this.list.push({ severity: 'warning', item, message });
  }

  count(severity: Finding['severity']): number {
    return this.list.filter((finding) => finding.severity === severity).length;
  }
}
