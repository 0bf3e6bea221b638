import{a,b,c}from"./chunk-TFYIRGQX.js";import"./chunk-T2V2SINW.js";export{b as Credentials,c as TestOutcome,a as providerWords};
