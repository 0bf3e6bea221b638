import{a,b,c}from"./chunk-DXR2KRHN.js";import"./chunk-BQCJCPAC.js";export{b as Credentials,c as TestOutcome,a as providerWords};
