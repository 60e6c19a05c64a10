// write-file-atomic ships no types; only the promise form used by the baseline is declared.
declare module 'write-file-atomic' {
  interface Options {
    /** fsync the temp file before the rename. @default true */
    fsync?: boolean;
    encoding?: BufferEncoding;
    mode?: number;
  }
  function writeFileAtomic(
    filename: string,
    data: string | Uint8Array,
    options?: Options,
  ): Promise<void>;
  export default writeFileAtomic;
}
